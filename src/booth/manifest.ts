/**
 * The on-disk change set. The manifest maps each touched path to its final state in the merged view; it is
 * rewritten whole and atomically after every staged operation, so a process that dies mid-operation leaves the
 * previous consistent change set.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { atomicWriteJson, isCode } from './durable';
import { StagingCorruptError } from './errors';
import { normalizeInput, relKey } from './paths';

export const MANIFEST_FORMAT = 'jukebox-staging/1';
export const MANIFEST_FILE = 'manifest.json';
export const JOURNAL_FILE = 'commit.json';
export const BLOBS_DIR = 'blobs';
/** Proves a directory is a staging area, so removing it recursively cannot delete a user's folder. */
export const MARKER_FILE = 'JUKEBOX_STAGING';

/** What the real disk held at a path when it was first staged; commit compares it to detect conflicts. */
export type Base =
  | { type: 'none' }
  /** An ancestor was deleted or recreated in staging, so the real entry (if any) is invisible and is pruned. */
  | { type: 'hidden' }
  | { type: 'file'; hash: string; size: number; mode: number }
  /**
   * `tree`: for a directory the change removes or replaces (deleted, recreated, renamed, overwritten), the blob
   * holding its listing at staging (src/booth/treeStamp.ts), so commit can refuse when anything inside changed.
   */
  | { type: 'dir'; mode: number; tree?: string };

export type FileEntry = {
  kind: 'file';
  op: 'write' | 'rename' | 'chmod';
  /** sha256 of the content, which lives in blobs/<hash>. */
  hash: string;
  size: number;
  mode: number;
  /** The mode asked for when the booth stripped setuid, setgid or sticky bits from it (`mode` is what stages). */
  refusedMode?: number;
  from?: string;
  base: Base;
};
export type DirEntry = {
  kind: 'dir';
  op: 'mkdir' | 'rename' | 'chmod';
  mode: number;
  /** Real children are hidden (the dir was created anew); commit deletes real children not in the change set. */
  opaque: boolean;
  refusedMode?: number;
  from?: string;
  base: Base;
};
/** A whiteout: the path (and, for a directory, everything below it) is deleted. */
export type WhiteoutEntry = { kind: 'whiteout'; op: 'delete'; base: Base };
export type Entry = FileEntry | DirEntry | WhiteoutEntry;

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  root: string;
  entries: Record<string, Entry>;
  /**
   * Tool steps whose staging is merged into `entries`, by step id, with the attempt that staged it and the
   * tool's result: the step checkpoint (src/booth/stepCheckpoint.ts). Merging one again changes nothing.
   */
  steps?: Record<string, StepRecord>;
}

export interface StepRecord {
  attempt: number;
  result: unknown;
}

export const LAYER_FORMAT = 'jukebox-staging-layer/1';

/**
 * What one tool step staged on top of the manifest it started from: the entries it set and the paths it
 * removed. It joins the manifest only when the step completes (`mergeLayer`); until then nobody else sees it,
 * and a retried step throws it away whole.
 */
export interface Layer {
  format: typeof LAYER_FORMAT;
  root: string;
  set: Record<string, Entry>;
  removed: string[];
}

export function layerOf(root: string, base: Record<string, Entry>, next: Record<string, Entry>): Layer {
  const set: Record<string, Entry> = {};
  for (const [k, e] of Object.entries(next))
    if (base[k] === undefined || JSON.stringify(base[k]) !== JSON.stringify(e)) set[k] = e;
  const removed = Object.keys(base).filter((k) => next[k] === undefined);
  return { format: LAYER_FORMAT, root, set, removed };
}

export function applyLayer(entries: Record<string, Entry>, layer: Layer): Record<string, Entry> {
  const out = { ...entries };
  for (const k of layer.removed) delete out[k];
  Object.assign(out, layer.set);
  return out;
}

const HASH_RE = /^[0-9a-f]{64}$/;

/**
 * A hand-edited or hostile manifest must not become a way to write outside the root at commit, so every key is
 * put through the same confinement as agent input and must come back unchanged.
 */
export function validateEntries(file: string, entries: unknown): Record<string, Entry> {
  if (typeof entries !== 'object' || entries === null) throw new StagingCorruptError(file, 'entries missing');
  for (const [key, e] of Object.entries(entries as Record<string, Entry>)) {
    let ok = false;
    try {
      ok = key !== '' && relKey(normalizeInput(key, [])) === key;
    } catch {
      ok = false;
    }
    if (!ok) throw new StagingCorruptError(file, `entry path ${JSON.stringify(key)} is not a confined path`);
    if (e.kind === 'file' && !HASH_RE.test(e.hash))
      throw new StagingCorruptError(file, `entry ${JSON.stringify(key)} has a malformed content hash`);
    if (e.kind !== 'file' && e.kind !== 'dir' && e.kind !== 'whiteout')
      throw new StagingCorruptError(file, `entry ${JSON.stringify(key)} has unknown kind`);
    const tree = (e.base as { tree?: unknown } | undefined)?.tree;
    if (tree !== undefined && (typeof tree !== 'string' || !HASH_RE.test(tree)))
      throw new StagingCorruptError(
        file,
        `entry ${JSON.stringify(key)} has a malformed directory listing hash`,
      );
  }
  return entries as Record<string, Entry>;
}

export async function readJson(file: string): Promise<unknown | null> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return null;
    throw new StagingCorruptError(file, 'cannot be read', err);
  }
  return parseJson(file, text);
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new StagingCorruptError(file, 'is not valid JSON (the atomic writer never leaves a torn one)', err);
  }
}

/**
 * The run's manifest, checked, or null when there is none yet. Synchronous: a step reads it at open, and a
 * thread-pool round trip for each of open, stat, read and close costs far more than reading the file.
 */
export function loadManifest(stagingDir: string, root: string): Manifest | null {
  const file = path.join(stagingDir, MANIFEST_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return null;
    throw new StagingCorruptError(file, 'cannot be read', err);
  }
  const m = parseJson(file, text) as Manifest | null;
  if (m === null) return null;
  if (m.format !== MANIFEST_FORMAT) throw new StagingCorruptError(file, `unknown format ${String(m.format)}`);
  if (m.root !== root)
    throw new StagingCorruptError(
      file,
      `it stages changes for root ${m.root}, not ${root}; open it with that root or use another stagingDir`,
    );
  validateEntries(file, m.entries);
  return m;
}

export async function saveManifest(stagingDir: string, m: Manifest, sync = true): Promise<void> {
  await atomicWriteJson(path.join(stagingDir, MANIFEST_FILE), m, sync);
}
