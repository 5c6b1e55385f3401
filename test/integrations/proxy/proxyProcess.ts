import { type ChildProcess, execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../../..');

export interface ProxyProcess {
  child: ChildProcess;
  url: string;
  ready: Record<string, unknown>;
  /** SIGTERM, as a user's Ctrl-C: the proxy seals its tapes and exits; resolves with the exit code and stderr. */
  stop(): Promise<{ code: number | null; stderr: string }>;
}

/** Runs the real `jbx proxy` entry (src/cli/bin.js) as a child process and waits for its JSON ready document. */
export async function spawnProxy(args: string[], timeoutMs = 30_000): Promise<ProxyProcess> {
  const child = spawn(process.execPath, ['src/cli/bin.js', 'proxy', '--port', '0', '--json', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`jbx proxy not ready after ${timeoutMs} ms:\n${stderr}`)),
      timeoutMs,
    );
    child.stdout.on('data', (d) => {
      stdout += d;
      try {
        const doc = JSON.parse(stdout) as Record<string, unknown>;
        clearTimeout(timer);
        resolve(doc);
      } catch {}
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`jbx proxy exited with ${code} before it was ready:\n${stdout}${stderr}`));
    });
  });
  return {
    child,
    url: String(ready.url),
    ready,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return { code: await exited, stderr };
    },
  };
}

/** Runs `jbx ARGS` to completion. */
export async function runJbx(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, ['src/cli/bin.js', ...args], {
      cwd: ROOT,
      timeout: 30_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
