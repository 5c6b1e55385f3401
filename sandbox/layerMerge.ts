/**
 * A tool step's checkpoint write: its files layer joins the run's manifest together with the step's record, in
 * one atomic, fsynced manifest write (sandbox/stepCheckpoint.ts).
 *
 * The durable work that must come before the checkpoint (the blobs-directory fsync; with SQL the shadow commit
 * holding the checkpoint row; the escrow merge) starts first; the manifest lock is taken while it runs, and under
 * it the manifest is read, merged, written to its temp file and fsynced alongside that work; the rename that
 * makes it the checkpoint waits for all of it. A step never waits for the lock before its SQL commit is under
 * way, so a step holding the lock while its commit waits on another step's read transaction never waits on a
 * step that is itself waiting for the lock.
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
  /**
   * The temp's write starts once this settles: a fsync `before` waits for first (the blobs directory, ahead of
   * the SQL commit) is not made to share the disk with the temp's, whose own fsync then overlaps the commit.
   */
  writeAfter?: Promise<unknown>;
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
    // Lets `before` send its first I/O (it starts in a microtask) before the lock and the merge hold the thread.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const file = path.join(stagingDir, MANIFEST_FILE);
  try {
    // Parallel steps of one run, in this process or in other workers, each read, merge and rename the whole
    // manifest: unserialized, the later rename drops the earlier step's entries and checkpoint. The lock is
    // taken while `before` runs, never ahead of it, so a step waiting for it has its own SQL commit under way
    // and holds up nobody's; taken there, its file is made while the fsyncs are in flight.
    return await withFileLock(path.join(stagingDir, `${MANIFEST_FILE}.lock`), async () => {
      const seen = readManifestText(stagingDir);
      const m =
        o.opened !== undefined && seen === o.opened.text
          ? o.opened.manifest
          : parseManifest(stagingDir, seen, root);
      const merged = mergeInto(m, root, layer, step, record);
      const tmp = tempNameFor(file);
      if (merged !== null) {
        if (o.writeAfter) await settled(o.writeAfter);
        work.push(settled(writeTemp(tmp, jsonText(merged), 0o600, true)));
      }
      const failed = (await Promise.all(work)).find((r) => r !== null) ?? null;
      if (failed !== null) {
        await fs.rm(tmp, { force: true });
        throw failed.reason;
      }
      if (merged === null) return false;
      // Synchronous like the lock around it: one metadata syscall, cheaper than a thread-pool round trip.
      renameSync(tmp, file);
      await fsyncDir(stagingDir);
      return true;
    });
  } catch (err) {
    // A manifest that cannot be read, or a lock never freed, fails the step once the work under way has ended.
    await Promise.all(work);
    throw err;
  }
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
