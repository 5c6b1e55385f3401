import fs from 'node:fs/promises';
import path from 'node:path';
import { InstallLockTimeoutError } from './errors';

const POLL_MS = 1_000;
const MAX_WAIT_MS = 20 * 60_000;

/**
 * Runs `fn` while holding an exclusive lock file (it holds the owner's pid). A lock whose owner died is
 * taken over, so a killed install never blocks the next one.
 */
export async function withFileLock<T>(
  file: string,
  log: (m: string) => void,
  fn: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + MAX_WAIT_MS;
  let announced = false;
  for (;;) {
    try {
      await fs.writeFile(file, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number(await fs.readFile(file, 'utf8').catch(() => ''));
    // An empty lock is one being written right now, unless it is old (its writer died mid-write).
    const fresh =
      owner === 0 && Date.now() - ((await fs.stat(file).catch(() => undefined))?.mtimeMs ?? 0) < 10_000;
    if (!fresh && !isAlive(owner)) {
      await fs.rm(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new InstallLockTimeoutError(file, owner);
    if (!announced) log(`waiting for pid ${owner}, which holds ${path.basename(file)}`);
    announced = true;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  try {
    return await fn();
  } finally {
    await fs.rm(file, { force: true });
  }
}

export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
