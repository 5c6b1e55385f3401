/**
 * A cross-process exclusive lock made of a file created with O_EXCL ('wx'): portable, no native addon, and
 * it works on every local filesystem. The file holds the owner's pid and host, so a lock left behind by a
 * killed process is recognised (its pid is gone) and broken instead of blocking the run forever.
 */
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { TapeLockTimeoutError } from './errors';

export interface LockOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
}

interface Owner {
  pid: number;
  host: string;
}

const HOST = hostname();
// A lock file still empty after this long belongs to a process that died between create and write.
const EMPTY_GRACE_MS = 5_000;

export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// Synchronous: three syscalls of microseconds each, taken twice per recorded step. As promises each was a
// thread-pool round trip, and on a busy machine those round trips cost more than the steps they guard.
async function tryCreate(file: string): Promise<boolean> {
  try {
    const fd = openSync(file, 'wx');
    try {
      writeSync(fd, JSON.stringify({ pid: process.pid, host: HOST }));
    } finally {
      closeSync(fd);
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

async function readOwner(file: string): Promise<{ owner: Owner | undefined; raw: string } | undefined> {
  try {
    const raw = await readFile(file, 'utf8');
    try {
      const o = JSON.parse(raw) as Owner;
      return { owner: typeof o.pid === 'number' ? o : undefined, raw };
    } catch {
      return { owner: undefined, raw };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Stale: written by a dead process on this host, or left empty by one that died mid-create. */
async function isStale(file: string, seen: { owner: Owner | undefined; raw: string }): Promise<boolean> {
  if (seen.owner) return seen.owner.host === HOST && !isAlive(seen.owner.pid);
  const st = await stat(file).catch(() => undefined);
  return st !== undefined && Date.now() - st.mtimeMs > EMPTY_GRACE_MS;
}

/**
 * Removes a stale lock. Only the holder of a second "breaker" lock may do so, and it re-reads the lock under
 * it: without that, two waiters could both see the dead owner, and the slower one would delete the lock the
 * faster one had just taken.
 */
async function breakStale(file: string, seen: { raw: string }): Promise<void> {
  const breaker = `${file}.break`;
  if (!(await tryCreate(breaker))) {
    const b = await readOwner(breaker);
    if (b && (await isStale(breaker, b))) await unlink(breaker).catch(() => {});
    return;
  }
  try {
    const again = await readOwner(file);
    if (again && again.raw === seen.raw && (await isStale(file, again))) await unlink(file).catch(() => {});
  } finally {
    await unlink(breaker).catch(() => {});
  }
}

export async function withFileLock<T>(
  file: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const started = Date.now();
  let delay = 1;
  let lastOwner = '';
  while (!(await tryCreate(file))) {
    const seen = await readOwner(file);
    if (seen) {
      lastOwner = seen.owner ? `pid ${seen.owner.pid} on ${seen.owner.host}` : '';
      if (await isStale(file, seen)) {
        await breakStale(file, seen);
        continue;
      }
    }
    if (Date.now() - started > timeoutMs)
      throw new TapeLockTimeoutError(file, lastOwner, Date.now() - started);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 25);
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(file);
    } catch {
      // Already gone (broken as stale by a process that misjudged us): nothing left to release.
    }
  }
}
