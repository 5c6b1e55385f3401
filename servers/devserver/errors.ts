import { crossRealmError, JukeboxError } from '../../src/errors';

export { TemporalConfigInvalidError } from '../../src/temporal/config';

/** `go` is not on PATH, so the pinned Temporal CLI cannot be built. */
export class GoToolchainMissingError extends JukeboxError {
  constructor(cause?: unknown) {
    super(
      'GO_MISSING',
      'The pinned Temporal CLI is not installed and building it needs Go, which is not on PATH. Install Go 1.24 or newer ' +
        '(apt-get install golang, or https://go.dev/dl/), or point JUKEBOX_TEMPORAL_CLI at an existing ' +
        '`temporal` binary, then run `npm run temporal:install` again.',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('GoToolchainMissingError', GoToolchainMissingError);

/** `go install` could not download the module: the proxy refused it, or there is no network. */
export class TemporalCliDownloadError extends JukeboxError {
  readonly stderr: string[];
  constructor(module: string, stderr: string[]) {
    super(
      'TEMPORAL_CLI_DOWNLOAD_FAILED',
      `go install could not download ${module}. go said:\n${quote(stderr)}\nCheck network access to the Go ` +
        'module proxy (GOPROXY, default https://proxy.golang.org) or set GOPROXY to a proxy you can reach; ' +
        'or install the CLI yourself and set JUKEBOX_TEMPORAL_CLI to its path.',
      { nonRetryable: true },
    );
    this.stderr = stderr;
  }
}
crossRealmError('TemporalCliDownloadError', TemporalCliDownloadError);

/** The module downloaded but did not compile or link (often: Go too old for the module's go.mod). */
export class TemporalCliBuildError extends JukeboxError {
  readonly stderr: string[];
  constructor(module: string, exitCode: number | null, stderr: string[]) {
    super(
      'TEMPORAL_CLI_BUILD_FAILED',
      `go install ${module} failed (exit ${exitCode}). go said:\n${quote(stderr)}\nIf go asks for a newer ` +
        'toolchain, upgrade Go (https://go.dev/dl/) or allow GOTOOLCHAIN=auto; or set JUKEBOX_TEMPORAL_CLI to a ' +
        'prebuilt `temporal` binary.',
      { nonRetryable: true },
    );
    this.stderr = stderr;
  }
}
crossRealmError('TemporalCliBuildError', TemporalCliBuildError);

/** Another process has held the install lock for too long. */
export class InstallLockTimeoutError extends JukeboxError {
  constructor(file: string, owner: number) {
    super(
      'INSTALL_LOCK_TIMEOUT',
      `Gave up waiting for ${file}, held by pid ${owner || 'unknown'} for over 20 minutes. If no install is running, ` +
        'delete that file and try again.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('InstallLockTimeoutError', InstallLockTimeoutError);

/** The Temporal CLI binary Jukebox was told to use does not exist or cannot be run. */
export class TemporalCliNotFoundError extends JukeboxError {
  readonly path: string;
  constructor(path: string, source: string, cause?: unknown) {
    super(
      'TEMPORAL_CLI_NOT_FOUND',
      `The Temporal CLI ${path} (from ${source}) does not exist or is not executable. Fix or unset ` +
        'JUKEBOX_TEMPORAL_CLI, or run `npm run temporal:install` to build the pinned CLI into .jukebox/bin.',
      { cause, nonRetryable: true },
    );
    this.path = path;
  }
}
crossRealmError('TemporalCliNotFoundError', TemporalCliNotFoundError);

/** Something that is not a Temporal frontend already listens on a port the dev server needs. */
export class DevServerPortTakenError extends JukeboxError {
  readonly port: number;
  constructor(host: string, port: number, setting: string) {
    super(
      'DEV_SERVER_PORT_TAKEN',
      `Port ${port} on ${host} is taken by a process that is not a Temporal server, so the dev server cannot ` +
        `start there. Stop that process (\`ss -ltnp 'sport = :${port}'\` shows it) or pick a free port with ` +
        `${setting}.`,
      { nonRetryable: true },
    );
    this.port = port;
  }
}
crossRealmError('DevServerPortTakenError', DevServerPortTakenError);

/** The dev server process exited, or never answered, before it was ready. */
export class DevServerStartError extends JukeboxError {
  readonly logTail: string[];
  constructor(address: string, problem: string, logTail: string[], logFile?: string) {
    const where = logFile ? ` Full log: ${logFile}.` : '';
    const tail =
      logTail.length > 0 ? `\nLast server log lines:\n${quote(logTail)}` : ' The server logged nothing.';
    super(
      'DEV_SERVER_START_FAILED',
      `The Temporal dev server for ${address} ${problem}.${tail}\nFix the cause above and start it again.${where}`,
      { nonRetryable: true },
    );
    this.logTail = logTail;
  }
}
crossRealmError('DevServerStartError', DevServerStartError);

/** Nothing answered on a Temporal address in time (the generic wait, not a server Jukebox started). */
export class TemporalServerTimeoutError extends JukeboxError {
  constructor(address: string, timeoutMs: number) {
    super(
      'TEMPORAL_SERVER_TIMEOUT',
      `No Temporal server answered on ${address} within ${Math.round(timeoutMs / 1000)}s. Start one with ` +
        '`npm run temporal:start`, or set JUKEBOX_TEMPORAL_ADDRESS to a server that is running.',
    );
  }
}
crossRealmError('TemporalServerTimeoutError', TemporalServerTimeoutError);

function quote(lines: string[]): string {
  return lines.map((l) => `  | ${l}`).join('\n');
}
