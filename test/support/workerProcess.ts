import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Runs the sample worker entry (examples/sample/worker.ts) in its own process, so a test can SIGKILL it like a crashed machine.
 * `node --import tsx` keeps it one process: the tsx CLI would put a child under it that SIGKILL cannot reach.
 */
export async function spawnWorker(
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
  /** Another worker entry (relative to the repository root) that prints the same ready line. */
  entry = 'examples/sample/worker.ts',
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (d) => {
    log += d;
  });
  child.stderr.on('data', (d) => {
    log += d;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`worker not ready after ${readyTimeoutMs} ms:\n${log}`)),
      readyTimeoutMs,
    );
    const onData = () => {
      if (log.includes('jukebox worker ready')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before it was ready:\n${log}`));
    });
  });
  return {
    child,
    output: () => log,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
