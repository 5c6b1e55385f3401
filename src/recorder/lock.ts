/**
 * A cross-process exclusive lock made of a file that only one process can create: portable, no native addon,
 * and it works on every local filesystem. The file holds the owner's pid and host, so a lock left behind by a
 * killed process is recognised (its pid is gone) and broken instead of blocking the run forever.
 *
 * Taking the lock is a hard link of a file the process wrote once per folder (its owner file) to the lock's
 * name: link() fails with EEXIST exactly as an O_EXCL create does, but it allocates no inode and writes no
 * data, so it costs a third of create + write + close (15 against 40 us here, and less journal work when
 * fsyncs are in flight, which is when the tape store takes it: twice per recorded step). The lock's bytes are
 * the owner file's, so a waiter reads the same pid and host either way. Where the filesystem has no hard links,
 * the lock is created with O_EXCL instead; processes of either kind exclude each other on the same name.
 */
import {
  closeSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { TapeLockTimeoutError } from './errors';

export interface LockOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
  /**
   * Take the lock as a hard link of this process's owner file in the lock's folder (written once per folder,
   * remembered for the process's life): for a long-lived folder locked often, as the tape store's. Default: an
   * O_EXCL create, which leaves nothing behind in folders that come and go (a booth's staging).
   */
  ownerLink?: boolean;
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

/** Owner files begin with this; the rest of the name is the pid and a random part (pids repeat across hosts). */
const OWNER_PREFIX = '.jbx-lock-owner-';
const OWNER_BYTES = JSON.stringify({ pid: process.pid, host: HOST });
/** This process's owner file in each folder; `false` where the folder's filesystem has no hard links. */
const owners = new Map<string, string | false>();
let ownersRemovedAtExit = false;

/**
 * This process's owner file in `dir`, written whole under a temporary name and renamed, so a link never points
 * at a partial one. Owner files of dead processes on this host, left by a crash, are removed on the way.
 */
function ownerFile(dir: string): string {
  const known = owners.get(dir);
  if (known) return known;
  for (const name of readdirSync(dir)) {
    const m = name.startsWith(OWNER_PREFIX) ? /^(\d+)-/.exec(name.slice(OWNER_PREFIX.length)) : null;
    if (m && Number(m[1]) !== process.pid) {
      const f = path.join(dir, name);
      try {
        const o = JSON.parse(readFileSync(f, 'utf8')) as Partial<Owner>;
        if (o.host === HOST && typeof o.pid === 'number' && !isAlive(o.pid)) unlinkSync(f);
      } catch {
        // Unreadable or gone: another process is cleaning up too.
      }
    }
  }
  const file = path.join(dir, `${OWNER_PREFIX}${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, OWNER_BYTES);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  owners.set(dir, file);
  if (!ownersRemovedAtExit) {
    ownersRemovedAtExit = true;
    process.once('exit', () => {
      for (const f of owners.values())
        if (f)
          try {
            unlinkSync(f);
          } catch {
            // Already gone.
          }
    });
  }
  return file;
}

/** Filesystems without hard links (FAT, some network and FUSE mounts) say so with one of these. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

// Synchronous: a syscall or two of microseconds, taken twice per recorded step. As promises each was a
// thread-pool round trip, and on a busy machine those round trips cost more than the steps they guard.
async function tryCreate(file: string, ownerLink = false): Promise<boolean> {
  const dir = path.dirname(file);
  if (ownerLink && owners.get(dir) !== false) {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(ownerFile(dir), file);
        return true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') return false;
        // Our owner file was removed under us (a folder cleaned by hand): write it again, once.
        if (code === 'ENOENT' && attempt === 0 && owners.get(dir)) {
          owners.delete(dir);
          continue;
        }
        if (!code || !NO_LINKS.has(code)) throw err;
        owners.set(dir, false);
        break;
      }
    }
  }
  try {
    const fd = openSync(file, 'wx');
    try {
      writeSync(fd, OWNER_BYTES);
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
  while (!(await tryCreate(file, options.ownerLink))) {
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
