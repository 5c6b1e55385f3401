/**
 * A tool step's checkpoint write: its files layer joins the run's manifest together with the step's record, in
 * one atomic, fsynced manifest write (sandbox/stepCheckpoint.ts).
 *
 * The merged manifest is written to its temp file and fsynced without the manifest lock, while the durable work
 * that must come before the checkpoint runs (the blobs-directory fsync; with SQL the shadow commit holding the
 * checkpoint row; the escrow merge). Only the rename that makes it the checkpoint takes the lock, and only if the
 * manifest still holds the bytes the merge started from; if a parallel step merged in between, the merge is
 * done again under the lock. Holding the lock across a shadow commit instead would let two parallel steps of
 * one SQLite shadow wait on each other (one in its commit, the other, still holding a read lock, on the lock).
 */
import { renameSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { withFileLock } from '../recorder/lock';
import { atomicWrite, fsyncDir, jsonText, lstatOrNull, tempNameFor, writeTemp } from './durable';
import {
  applyLayer,
  BLOBS_DIR,
  type Layer,
  MANIFEST_FILE,
  MANIFEST_FORMAT,
  MARKER_FILE,
  type Manifest,
  parseManifest,
  readManifestText,
  type StepRecord,
} from './manifest';

export interface MergeOptions {
  /**
   * The manifest as the step's booth read it at open (null text: there was none): when the file still holds
   * those bytes, the merge starts from this copy, already parsed and checked, instead of parsing it again.
   */
  opened?: { text: string | null; manifest: Manifest };
  /** False when the staging folder (blobs/, marker) may not exist yet. */
  stagingReady: boolean;
  /** Fsync the blobs directory before the checkpoint (the layer wrote blobs whose names are not durable yet). */
  blobsDirSync: boolean;
  /** Durable work that must finish before the checkpoint; it runs alongside the temp's write and fsync. */
  before?: () => Promise<void>;
}

/**
 * The checkpoint write: the manifest as it is on disk (a completed retry's record makes merging again a no-op)
 * plus the layer and the step's record, fsynced. Returns whether this call merged it.
 */
export async function writeMerged(
  root: string,
  stagingDir: string,
  layer: Layer,
  step: string,
  record: StepRecord,
  o: MergeOptions,
): Promise<boolean> {
  if (!o.stagingReady) {
    await fs.mkdir(path.join(stagingDir, BLOBS_DIR), { recursive: true, mode: 0o700 });
    const marker = path.join(stagingDir, MARKER_FILE);
    if ((await lstatOrNull(marker)) === null)
      await atomicWrite(
        marker,
        'staging area of a Jukebox StagedWorkspace; see docs/shadow-booth.md\n',
        0o600,
      );
  }
  const work: Promise<{ reason: unknown } | null>[] = [];
  if (o.blobsDirSync) work.push(settled(fsyncDir(path.join(stagingDir, BLOBS_DIR))));
  if (o.before) {
    work.push(settled(o.before()));
    // Lets `before` send its first I/O (it starts in a microtask) before the merge below holds the thread.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  let seen: string | null;
  let merged: Manifest | null;
  try {
    seen = readManifestText(stagingDir);
    const m =
      o.opened !== undefined && seen === o.opened.text
        ? o.opened.manifest
        : parseManifest(stagingDir, seen, root);
    merged = mergeInto(m, root, layer, step, record);
  } catch (err) {
    // A manifest that cannot be read fails the step, once the work already started has ended.
    await Promise.all(work);
    throw err;
  }
  const file = path.join(stagingDir, MANIFEST_FILE);
  const tmp = tempNameFor(file);
  if (merged !== null) work.push(settled(writeTemp(tmp, jsonText(merged), 0o600, true)));
  const failed = (await Promise.all(work)).find((r) => r !== null) ?? null;
  if (failed !== null) {
    await fs.rm(tmp, { force: true });
    throw failed.reason;
  }
  if (merged === null) return false;
  // Parallel steps of one run, in this process or in other workers, each read, merge and rename the whole
  // manifest: unserialized, the later rename drops the earlier step's entries and checkpoint.
  return withFileLock(path.join(stagingDir, `${MANIFEST_FILE}.lock`), async () => {
    const now = readManifestText(stagingDir);
    if (now === seen) {
      // Synchronous like the lock around it: one metadata syscall, cheaper than a thread-pool round trip.
      renameSync(tmp, file);
      await fsyncDir(stagingDir);
      return true;
    }
    await fs.rm(tmp, { force: true });
    const again = mergeInto(parseManifest(stagingDir, now, root), root, layer, step, record);
    if (again === null) return false;
    await atomicWrite(file, jsonText(again), 0o600);
    return true;
  });
}

/** Null once `p` fulfils, its reason if it rejects: handled from the start, so no rejection goes unhandled. */
function settled(p: Promise<unknown>): Promise<{ reason: unknown } | null> {
  return p.then(
    () => null,
    (reason: unknown) => ({ reason }),
  );
}

/** The manifest with the layer merged and the step recorded, or null when the step is recorded already. */
function mergeInto(
  m: Manifest | null,
  root: string,
  layer: Layer,
  step: string,
  record: StepRecord,
): Manifest | null {
  const steps = m?.steps ?? {};
  if (steps[step] !== undefined) return null;
  const entries = applyLayer(m?.entries ?? {}, layer);
  return { format: MANIFEST_FORMAT, root, entries, steps: { ...steps, [step]: record } };
}
