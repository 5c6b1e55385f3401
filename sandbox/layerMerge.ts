/**
 * A tool step's checkpoint write: its files layer joins the run's manifest together with the step's record, in
 * one atomic, fsynced manifest write (sandbox/stepCheckpoint.ts).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { withFileLock } from '../recorder/lock';
import { atomicWrite, fsyncDir, lstatOrNull } from './durable';
import {
  applyLayer,
  BLOBS_DIR,
  type Layer,
  loadManifest,
  MANIFEST_FILE,
  MANIFEST_FORMAT,
  MARKER_FILE,
  type StepRecord,
  saveManifest,
} from './manifest';

/**
 * The checkpoint write: the manifest as it is on disk (a completed retry's record makes merging again a no-op)
 * plus the layer and the step's record, fsynced. `blobsDirSync` joins the blobs-directory fsync to it.
 */
export async function writeMerged(
  root: string,
  stagingDir: string,
  layer: Layer,
  step: string,
  record: StepRecord,
  stagingReady: boolean,
  blobsDirSync: boolean,
): Promise<boolean> {
  // Idempotent, so outside the lock; the lock file lives in the staging folder, which must exist first.
  if (!stagingReady) {
    await fs.mkdir(path.join(stagingDir, BLOBS_DIR), { recursive: true, mode: 0o700 });
    const marker = path.join(stagingDir, MARKER_FILE);
    if ((await lstatOrNull(marker)) === null)
      await atomicWrite(
        marker,
        'staging area of a Jukebox StagedWorkspace; see docs/shadow-booth.md\n',
        0o600,
      );
  }
  // Parallel steps of one run, in this process or in other workers, each read, merge and rename the whole
  // manifest: unserialized, the later rename drops the earlier step's entries and checkpoint.
  return withFileLock(path.join(stagingDir, `${MANIFEST_FILE}.lock`), () =>
    mergeLocked(root, stagingDir, layer, step, record, blobsDirSync),
  );
}

async function mergeLocked(
  root: string,
  stagingDir: string,
  layer: Layer,
  step: string,
  record: StepRecord,
  blobsDirSync: boolean,
): Promise<boolean> {
  const m = await loadManifest(stagingDir, root);
  const steps = m?.steps ?? {};
  if (steps[step] !== undefined) return false;
  const entries = applyLayer(m?.entries ?? {}, layer);
  // Durable: this write is the step's checkpoint.
  await saveManifest(
    stagingDir,
    { format: MANIFEST_FORMAT, root, entries, steps: { ...steps, [step]: record } },
    true,
    blobsDirSync ? () => fsyncDir(path.join(stagingDir, BLOBS_DIR)) : undefined,
  );
  return true;
}
