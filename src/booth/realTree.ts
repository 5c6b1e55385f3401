/**
 * The real tree as the workspace reads it: one component at a time with lstat, never through a symlink or into
 * a special file, and files opened so that a swap after the walk fails instead of being read through.
 */
import type { Stats } from 'node:fs';
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { printable } from '../errors';
import { isCode, lstatOrNull } from './durable';
import { PathEscapeError, PathRefusedError, WorkspaceFsError } from './errors';
import { isWithin, type Rel, relKey } from './paths';

export async function realLstat(
  root: string,
  roots: readonly string[],
  prefix: Rel,
  input: string,
): Promise<Stats | null> {
  const p = path.join(root, ...prefix);
  const st = await lstatOrNull(p);
  if (st === null) return null;
  if (st.isSymbolicLink()) {
    const target = await fs.readlink(p);
    const abs = path.resolve(path.dirname(p), target);
    let landed = abs;
    try {
      landed = await fs.realpath(abs);
    } catch {
      // A dangling link is judged by where it points lexically.
    }
    const where = relKey(prefix);
    if (!roots.some((r) => isWithin(r, landed)))
      throw new PathEscapeError(
        input,
        'symlink-outside-root',
        `${printable(where)} is a symlink to ${printable(target)}`,
      );
    throw new PathRefusedError(
      input,
      'symlink',
      `${printable(where)} is a symlink (to ${printable(target)}, inside the root); the booth does not follow symlinks, use the target path`,
    );
  }
  if (!st.isFile() && !st.isDirectory())
    throw new PathRefusedError(
      input,
      'special-file',
      `${printable(relKey(prefix))} is a device, FIFO or socket; only regular files and directories are accessible`,
    );
  return st;
}

/**
 * O_NOFOLLOW + O_NONBLOCK, then fstat against the earlier lstat: if the file was swapped for a link or a FIFO
 * since the walk, the open fails or the inode differs, instead of reading through it or hanging.
 */
export async function readReal(root: string, rel: Rel, st: Stats, input: string): Promise<Buffer> {
  const p = path.join(root, ...rel);
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(p, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if (isCode(err, 'ELOOP'))
      throw new PathRefusedError(
        input,
        'symlink',
        `${printable(relKey(rel))} became a symlink while being opened`,
      );
    throw err;
  }
  try {
    const now = await fh.stat();
    if (!now.isFile() || now.ino !== st.ino || now.dev !== st.dev)
      throw new WorkspaceFsError(input, 'EINVAL', 'was replaced while being opened; retry the read');
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}
