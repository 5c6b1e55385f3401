import { spawn } from 'node:child_process';
import path from 'node:path';

const BIN = path.join(__dirname, '../../../src/cli/bin.js');

export interface JbxRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `jbx` in a child process. `offline` puts it in a fresh network namespace (`unshare -n`: no
 * interface but a downed loopback), so any connection it tries, even to 127.0.0.1, fails with ENETUNREACH.
 */
export function runJbx(
  args: string[],
  options: { offline?: boolean; cwd?: string; env?: NodeJS.ProcessEnv } = {},
) {
  const argv = options.offline
    ? ['unshare', '-n', process.execPath, BIN, ...args]
    : [process.execPath, BIN, ...args];
  return new Promise<JbxRun>((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd ?? path.join(__dirname, '../../..'),
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
