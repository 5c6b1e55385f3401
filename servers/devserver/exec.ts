import { spawn } from 'node:child_process';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a short command to completion. Resolves `undefined` when the program does not exist (ENOENT) so
 * callers can turn that into their own "install X" error instead of a spawn stack trace.
 */
export function runCommand(
  command: string,
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
    onStderrLine?: (line: string) => void;
    cwd?: string;
  } = {},
): Promise<RunResult | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let partial = '';
    const timer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : undefined;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      stderr += text;
      if (!options.onStderrLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) options.onStderrLine(line);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === 'ENOENT') resolve(undefined);
      else reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (partial && options.onStderrLine) options.onStderrLine(partial);
      resolve({ code, stdout, stderr });
    });
  });
}
