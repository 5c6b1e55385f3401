/**
 * The package as a user gets it: built, packed with `npm pack`, installed from the tarball into an empty folder
 * with nothing but the package registry (npm's cache helps, nothing links into this repository), and the `jbx`
 * of that install run as a process.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

export const ROOT = path.resolve(__dirname, '../..');

/** The environment of a user's shell: none of npm's per-script variables from the `npm test` that runs us. */
export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^npm_/i.test(k) && k !== 'ONNXRUNTIME_NODE_INSTALL' && !/_API_KEY$/.test(k) && !/^JUKEBOX_/.test(k))
      env[k] = v;
  return {
    ...env,
    JUKEBOX_TEMPORAL_ADDRESS: process.env.JUKEBOX_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    JUKEBOX_TEMPORAL_NAMESPACE: process.env.JUKEBOX_TEMPORAL_NAMESPACE ?? 'jukebox',
    ...extra,
  };
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

export async function run(cmd: string, args: string[], cwd: string, env = userEnv()): Promise<Run> {
  const t0 = performance.now();
  try {
    const r = await promisify(execFile)(cmd, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - t0 };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '', ms: performance.now() - t0 };
  }
}

/** The newest mtime of any file under `dir`. */
function newest(dir: string): number {
  let latest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    latest = Math.max(latest, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return latest;
}

/** Builds dist/ unless it is newer than every source file (npm test builds it just before). */
export async function buildIfStale(): Promise<void> {
  const built = path.join(ROOT, 'dist/index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newest(path.join(ROOT, 'src'))) return;
  const r = await run(process.execPath, ['scripts/build.js'], ROOT, process.env);
  if (r.code !== 0) throw new Error(`npm run build failed:\n${r.stdout}\n${r.stderr}`);
}

/**
 * Signals a started process and everything it started: `npx jbx view` and `npm run worker` are npm processes
 * whose node child would outlive a signal to npm alone.
 */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone already
  }
}

/**
 * Starts a long-running process in a process group of its own and resolves once a line of its output matches
 * `ready`; `stop` ends the whole group.
 */
export function startUntil(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  timeoutMs = 120_000,
): Promise<{ child: ChildProcess; match: RegExpMatchArray; output: () => string }> {
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signalGroup(child, 'SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} was not ready after ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = output.match(ready);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m, output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} ${args.join(' ')} exited (${code}) before it was ready:\n${output}`));
    });
  });
}

export async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child) return;
  const exited = child.exitCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r));
  signalGroup(child, 'SIGINT');
  const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
  // npm may exit before its child has: whatever is left of the group goes too.
  signalGroup(child, 'SIGKILL');
}
