import { crossRealmError, JukeboxError, printableJson, quoted } from '../../errors';

/** The command ran past its timeout and was killed; nothing it wrote was staged. */
export class ShellTimeoutError extends JukeboxError {
  readonly argv: string[];
  readonly timeoutMs: number;
  readonly stdout: string;
  readonly stderr: string;
  constructor(argv: string[], timeoutMs: number, stdout: string, stderr: string) {
    super(
      'SHELL_TIMEOUT',
      `shell command ${printableJson(argv)} did not finish within ${timeoutMs} ms and was killed; nothing it wrote was staged. Raise timeoutMs or make the command finish sooner`,
      { nonRetryable: true },
    );
    this.argv = argv;
    this.timeoutMs = timeoutMs;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}
crossRealmError('ShellTimeoutError', ShellTimeoutError);

/** The machine cannot provide the isolation asked for; the command was not run. */
export class ShellIsolationUnavailableError extends JukeboxError {
  constructor(detail: string, cause?: unknown) {
    super(
      'SHELL_ISOLATION_UNAVAILABLE',
      `cannot isolate shell commands: ${detail}. Without bubblewrap a command could write the real workspace through absolute paths, reach the network and read the worker's files; install bubblewrap (scripts/system-deps.sh), or pass isolation: 'none' to StagedShell to accept running unconfined (docs/shadow-booth.md)`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ShellIsolationUnavailableError', ShellIsolationUnavailableError);

/** The command or its options are malformed (empty argv, NUL bytes, no timeout). */
export class ShellConfigError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('SHELL_CONFIG', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ShellConfigError', ShellConfigError);

/** The command wrote something the booth refuses to stage (e.g. over a hard-linked file); nothing was staged. */
export class ShellChangesRefusedError extends JukeboxError {
  readonly path: string;
  constructor(path: string, cause: unknown) {
    super(
      'SHELL_CHANGES_REFUSED',
      `the command's writes were not staged, none of them: ${quoted(path)} was refused (${cause instanceof Error ? cause.message : String(cause)})`,
      { cause, nonRetryable: true },
    );
    this.path = path;
  }
}
crossRealmError('ShellChangesRefusedError', ShellChangesRefusedError);

/** The sandbox or the command could not be started (missing executable, bwrap setup failure). */
export class ShellSpawnError extends JukeboxError {
  constructor(detail: string, cause?: unknown) {
    super('SHELL_SPAWN_FAILED', `shell command could not be started: ${detail}`, {
      cause,
      nonRetryable: false,
    });
  }
}
crossRealmError('ShellSpawnError', ShellSpawnError);

/** The command passed one of its limits and was killed (or, for file size, stopped by the kernel); nothing it wrote was staged. */
export class ShellLimitError extends JukeboxError {
  readonly argv: string[];
  /** Which limit: CPU time, memory, processes, stdout + stderr bytes, or the size of one file. */
  readonly limit: 'cpu' | 'memory' | 'processes' | 'output' | 'fileSize';
  /** The configured value (seconds for cpu, a count for processes, bytes otherwise). */
  readonly value: number;
  /** What enforced it on this machine (src/booth/shell/limits.ts). */
  readonly mechanism: string;
  readonly stdout: string;
  readonly stderr: string;
  constructor(
    argv: string[],
    limit: ShellLimitError['limit'],
    value: number,
    mechanism: string,
    stdout: string,
    stderr: string,
  ) {
    const key = {
      cpu: 'cpuSeconds',
      memory: 'memoryBytes',
      processes: 'processes',
      output: 'outputBytes',
      fileSize: 'fileBytes',
    }[limit];
    super(
      'SHELL_LIMIT',
      `shell command ${printableJson(argv)} passed its ${limit} limit (${key} ${value}, enforced by ${mechanism}) and was stopped; nothing it wrote was staged. Make the command use less, or raise shell.limits.${key} in the booth config`,
      { nonRetryable: true },
    );
    this.argv = argv;
    this.limit = limit;
    this.value = value;
    this.mechanism = mechanism;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}
crossRealmError('ShellLimitError', ShellLimitError);
