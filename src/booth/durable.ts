/** Crash-safe file primitives: a reader after a crash sees either the old or the new bytes, never a torn file. */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Makes a rename or unlink in `dir` durable; the data fsync alone does not persist the directory entry. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fs.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * temp in the same directory + fsync + rename + fsync(dir). `tmpName` may be fixed so a replayed step overwrites
 * its own leftover instead of leaving a second one.
 */
export async function atomicWrite(
  target: string,
  data: Uint8Array | string,
  mode = 0o644,
  tmpName?: string,
  /**
   * false: atomic (never torn, a killed process leaves old or new) but not durable across a power loss;
   * 'data': the bytes are fsynced, the directory entry is left for the caller to fsync once for many files.
   */
  sync: boolean | 'data' = true,
): Promise<void> {
  const dir = path.dirname(target);
  const tmp = tempNameFor(target, tmpName);
  await writeTemp(tmp, data, mode, sync !== false);
  await fs.rename(tmp, target);
  if (sync === true) await fsyncDir(dir);
}

/** A temp file's path beside `target`: `tmpName`, or a random one no other writer picks. */
function tempNameFor(target: string, tmpName?: string): string {
  return path.join(
    path.dirname(target),
    tmpName ?? `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`,
  );
}

/** The first half of atomicWrite: the temp's bytes and exact mode, fsynced with `sync`. */
async function writeTemp(tmp: string, data: Uint8Array | string, mode: number, sync: boolean): Promise<void> {
  const fh = await fs.open(tmp, 'w', mode);
  try {
    await fh.writeFile(data);
    // open()'s mode is filtered by the umask and ignored for an existing leftover temp; set it exactly.
    await fh.chmod(mode);
    if (sync) await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function atomicWriteJson(target: string, value: unknown, sync = true): Promise<void> {
  await atomicWrite(target, `${JSON.stringify(value, null, 1)}\n`, 0o600, undefined, sync);
}

export async function lstatOrNull(p: string): Promise<import('node:fs').Stats | null> {
  try {
    return await fs.lstat(p);
  } catch (err) {
    if (isCode(err, 'ENOENT') || isCode(err, 'ENOTDIR')) return null;
    throw err;
  }
}

export function isCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}
