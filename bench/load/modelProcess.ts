import { spawn } from 'node:child_process';
import path from 'node:path';

export interface ModelProcess {
  url: string;
  pid: number;
  /** Requests answered since start or the last reset. */
  requests(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The scripted model server in a process of its own, as a hosted model is: its CPU, sockets and memory are not
 * counted as the worker's.
 */
export async function startModelProcess(scriptFile: string): Promise<ModelProcess> {
  const root = path.join(__dirname, '../..');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'src/testing/modelserver/main.ts'), '--script', scriptFile],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the model server exited (code ${code}): ${out}`)));
  });
  child.stdout.resume();
  const call = async (method: string, route: string) => {
    const res = await fetch(`${url}${route}`, { method });
    if (!res.ok) throw new Error(`${method} ${route} on the model server: HTTP ${res.status}`);
    return (await res.json()) as { requests?: number };
  };
  return {
    url,
    pid: child.pid!,
    requests: async () => Number((await call('GET', '/_jukebox/stats')).requests),
    reset: async () => {
      await call('POST', '/_jukebox/reset');
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
