/**
 * Applying a change set to the real root. The plan is written as a journal before the first real byte moves;
 * every step is idempotent, so finishing an interrupted commit means replaying the whole journal, with no
 * bookkeeping of which steps already ran (a crash between a step and its bookkeeping cannot then lie).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { printable } from '../errors';
import { atomicWrite, atomicWriteJson, fsyncDir, isCode, lstatOrNull, sha256 } from './durable';
import { PathEscapeError, PathRefusedError, StagingCorruptError, WorkspaceFsError } from './errors';
import { BLOBS_DIR, type Entry, JOURNAL_FILE, MANIFEST_FILE, readJson, validateEntries } from './manifest';
import { keyRel } from './paths';
import { STEP_LOG_FILE } from './stepLog';

export const JOURNAL_FORMAT = 'jukebox-commit/1';

export type Step =
  | { op: 'delete'; path: string }
  | { op: 'dir'; path: string; mode: number; prune: boolean }
  | { op: 'file'; path: string; hash: string; mode: number };

export interface Journal {
  format: typeof JOURNAL_FORMAT;
  id: string;
  root: string;
  state: 'applying' | 'applied';
  steps: Step[];
}

export type FaultHook = (name: string) => void | Promise<void>;

function compareRel(a: string, b: string): number {
  const x = keyRel(a);
  const y = keyRel(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

/** Parents sort before children, so a directory exists (and is pruned) before anything is put in it. */
export function planSteps(entries: Record<string, Entry>): Step[] {
  return Object.keys(entries)
    .sort(compareRel)
    .map((key): Step => {
      const e = entries[key]!;
      if (e.kind === 'whiteout') return { op: 'delete', path: key };
      if (e.kind === 'dir') return { op: 'dir', path: key, mode: e.mode, prune: e.opaque };
      return { op: 'file', path: key, hash: e.hash, mode: e.mode };
    });
}

/**
 * Re-checks, right before touching it, that every parent of `key` is still a real directory: the tree may have
 * been changed by someone else since the path was staged, and a parent swapped for a symlink would redirect the
 * write outside the root.
 */
export async function confirmParents(root: string, key: string): Promise<void> {
  const rel = keyRel(key);
  for (let i = 0; i < rel.length - 1; i++) {
    const p = path.join(root, ...rel.slice(0, i + 1));
    const st = await lstatOrNull(p);
    if (st === null)
      throw new WorkspaceFsError(
        key,
        'ENOENT',
        `cannot be committed: its parent ${printable(p)} vanished from the real tree`,
      );
    if (st.isSymbolicLink())
      throw new PathEscapeError(
        key,
        'symlink-outside-root',
        `its parent ${printable(p)} became a symlink after staging`,
      );
    if (!st.isDirectory())
      throw new PathRefusedError(key, 'special-file', `its parent ${printable(p)} is no longer a directory`);
  }
}

async function readBlob(stagingDir: string, hash: string): Promise<Buffer> {
  const file = path.join(stagingDir, BLOBS_DIR, hash);
  let data: Buffer;
  try {
    data = await fs.readFile(file);
  } catch (err) {
    throw new StagingCorruptError(file, 'staged content is missing', err);
  }
  if (sha256(data) !== hash) throw new StagingCorruptError(file, 'staged content does not match its hash');
  return data;
}

async function applyStep(
  root: string,
  stagingDir: string,
  j: Journal,
  i: number,
  planned: Set<string>,
): Promise<void> {
  const step = j.steps[i]!;
  await confirmParents(root, step.path);
  const target = path.join(root, ...keyRel(step.path));
  const parent = path.dirname(target);
  const st = await lstatOrNull(target);
  if (step.op === 'delete') {
    // fs.rm never follows symlinks: a link inside a deleted tree is unlinked, its target untouched.
    if (st !== null) {
      await fs.rm(target, { recursive: true, force: true });
      await fsyncDir(parent);
    }
    return;
  }
  if (step.op === 'dir') {
    if (st !== null && !st.isDirectory()) await fs.rm(target, { recursive: true, force: true });
    if (st === null || !st.isDirectory()) await fs.mkdir(target, { mode: step.mode });
    await fs.chmod(target, step.mode);
    if (step.prune) {
      for (const name of await fs.readdir(target)) {
        const child = `${step.path}/${name}`;
        if (!planned.has(child)) await fs.rm(path.join(target, name), { recursive: true, force: true });
      }
      await fsyncDir(target);
    }
    await fsyncDir(parent);
    return;
  }
  if (st?.isDirectory()) await fs.rm(target, { recursive: true, force: true });
  const data = await readBlob(stagingDir, step.hash);
  // A fixed temp name per (commit, step): a replay overwrites its own leftover instead of littering the tree.
  await atomicWrite(target, data, step.mode, `.jbx-commit-${j.id}-${i}.tmp`);
}

export async function loadJournal(stagingDir: string, root: string): Promise<Journal | null> {
  const file = path.join(stagingDir, JOURNAL_FILE);
  const j = (await readJson(file)) as Journal | null;
  if (j === null) return null;
  if (j.format !== JOURNAL_FORMAT || !Array.isArray(j.steps) || !/^[0-9a-f]+$/.test(String(j.id)))
    throw new StagingCorruptError(file, 'not a commit journal');
  if (j.root !== root) throw new StagingCorruptError(file, `it commits to root ${j.root}, not ${root}`);
  const asEntries: Record<string, Entry> = {};
  for (const s of j.steps)
    asEntries[s.path] =
      s.op === 'file'
        ? { kind: 'file', op: 'write', hash: s.hash, size: 0, mode: s.mode, base: { type: 'none' } }
        : { kind: 'whiteout', op: 'delete', base: { type: 'none' } };
  validateEntries(file, asEntries);
  return j;
}

export async function writeJournal(stagingDir: string, j: Journal): Promise<void> {
  await atomicWriteJson(path.join(stagingDir, JOURNAL_FILE), j);
}

/** Replays a journal to the end and removes the staging area. Safe to call any number of times. */
export async function runJournal(
  root: string,
  stagingDir: string,
  j: Journal,
  fault: FaultHook,
): Promise<void> {
  if (j.state === 'applying') {
    const planned = new Set(j.steps.map((s) => s.path));
    for (let i = 0; i < j.steps.length; i++) {
      await applyStep(root, stagingDir, j, i, planned);
      await fault(`commit:file-applied:${i}`);
    }
    await fsyncDir(root);
    j.state = 'applied';
    await writeJournal(stagingDir, j);
    await fault('commit:applied');
  }
  await removeStaging(stagingDir, fault);
}

/**
 * The journal goes last: while it exists a restart knows the real tree is already final and only cleanup is
 * left; the manifest and the step log go first so a half-removed area never looks like an uncommitted change set.
 */
export async function removeStaging(stagingDir: string, fault: FaultHook): Promise<void> {
  await fs.rm(path.join(stagingDir, MANIFEST_FILE), { force: true });
  await fs.rm(path.join(stagingDir, STEP_LOG_FILE), { force: true });
  await fault('commit:manifest-removed');
  await fs.rm(path.join(stagingDir, BLOBS_DIR), { recursive: true, force: true });
  await fs.rm(path.join(stagingDir, JOURNAL_FILE), { force: true });
  await fs.rm(stagingDir, { recursive: true, force: true });
  try {
    await fsyncDir(path.dirname(stagingDir));
  } catch (err) {
    if (!isCode(err, 'ENOENT')) throw err;
  }
}
