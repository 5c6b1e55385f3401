/**
 * What a real directory tree held when a staged change that removes or replaces it was made (a deleted,
 * recreated, renamed or overwritten directory). Commit compares the tree with it and refuses, naming each path,
 * when anything inside was added, removed or changed since, so a directory commit never deletes work that
 * arrived after the agent looked.
 *
 * Each entry is identified by its type, mode, size, inode and ctime (files), type, mode and inode
 * (directories), or type, inode and ctime (anything else), read with lstat and never through a link. ctime
 * cannot be set from user space, so an entry whose stamp is unchanged was not written, replaced or chmod-ed;
 * the walk reads no content, so stamping costs one lstat per entry. It is stricter than a content comparison
 * (a file rewritten with the same bytes counts as changed), never looser.
 */
import type { BigIntStats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isCode } from './durable';
import { StagingCorruptError } from './errors';

export const TREE_FORMAT = 'jukebox-tree/1';

interface TreeListing {
  format: typeof TREE_FORMAT;
  /** Relative path ('' for the directory itself) → stamp. */
  entries: Record<string, string>;
}

function stampOf(st: BigIntStats): string {
  const mode = (st.mode & 0o7777n).toString(8);
  if (st.isDirectory()) return `d:${mode}:${st.ino}`;
  if (st.isFile()) return `f:${mode}:${st.size}:${st.ino}:${st.ctimeNs}`;
  const type = st.isSymbolicLink() ? 'l' : 'o';
  return `${type}:${st.ino}:${st.ctimeNs}`;
}

async function lstatOrNull(p: string): Promise<BigIntStats | null> {
  try {
    return await fs.lstat(p, { bigint: true });
  } catch (err) {
    if (isCode(err, 'ENOENT') || isCode(err, 'ENOTDIR')) return null;
    throw err;
  }
}

/** The stamps of `dir` and everything below it; an entry that vanished mid-walk is simply absent. */
async function listTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string): Promise<void> => {
    const st = await lstatOrNull(rel === '' ? dir : path.join(dir, rel));
    if (st === null) return;
    out[rel] = stampOf(st);
    if (!st.isDirectory()) return;
    let names: string[];
    try {
      names = await fs.readdir(path.join(dir, rel));
    } catch (err) {
      if (isCode(err, 'ENOENT') || isCode(err, 'ENOTDIR')) return;
      throw err;
    }
    for (const name of names.sort()) await walk(rel === '' ? name : `${rel}/${name}`);
  };
  await walk('');
  return out;
}

/** The listing of the real tree at `dir`, serialized for the staging area's blob store. */
export async function stampTree(dir: string): Promise<Buffer> {
  const listing: TreeListing = { format: TREE_FORMAT, entries: await listTree(dir) };
  return Buffer.from(JSON.stringify(listing));
}

/**
 * Relative paths (sorted; '' is the directory itself) under `dir` that were added, removed or changed since
 * `stored` (a `stampTree` result, read from `file`) was taken.
 */
export async function treeChanges(dir: string, stored: Buffer, file: string): Promise<string[]> {
  let then: TreeListing;
  try {
    then = JSON.parse(stored.toString('utf8')) as TreeListing;
  } catch (err) {
    throw new StagingCorruptError(file, 'the directory listing taken at staging is not valid JSON', err);
  }
  if (then?.format !== TREE_FORMAT || typeof then.entries !== 'object' || then.entries === null)
    throw new StagingCorruptError(file, 'not a directory listing taken at staging');
  const now = await listTree(dir);
  const changed = new Set<string>();
  for (const [rel, stamp] of Object.entries(now)) if (then.entries[rel] !== stamp) changed.add(rel);
  for (const rel of Object.keys(then.entries)) if (now[rel] === undefined) changed.add(rel);
  return [...changed].sort();
}
