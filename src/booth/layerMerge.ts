/**
 * A tool step's checkpoint write, and the run's staged change set as it is read back: the manifest plus the
 * step log (src/booth/stepLog.ts). The checkpoint appends one record (the step's layer, its record and the bytes
 * of the blobs it wrote) to the log and fdatasyncs it: the append is the checkpoint. Durable work that must come
 * first (with SQL the shadow commit holding the checkpoint row; the escrow merge) runs before it, since a record
 * seen by a retry counts. Parallel steps of one run, in this process or in other workers, append under a lock
 * file, held only for the read of the log's tail and the write (the fdatasync runs after it, so the appends of
 * parallel steps share their flushes); a step never holds it while it waits for its SQL commit.
 */
import { closeSync, fdatasync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import path from 'node:path';
import { withFileLock } from '../recorder/lock';
import type { FaultHook } from './commit';
import { atomicWrite, fsyncDir, isCode, lstatOrNull, sha256 } from './durable';
import { StagingCorruptError } from './errors';
import {
  BLOBS_DIR,
  type Entry,
  type Layer,
  loadManifest,
  MANIFEST_FILE,
  MANIFEST_FORMAT,
  type Manifest,
  type StepRecord,
  saveManifest,
} from './manifest';
import { makeStagingArea } from './stagingFolder';
import {
  decodeRecords,
  encodeRecord,
  headerGeneration,
  readStepLog,
  STEP_LOG_FILE,
  STEP_LOG_HEADER_BYTES,
  stepLogHeader,
} from './stepLog';

/** Records after which a checkpoint folds the log into the manifest, so reading it back stays bounded. */
export const COMPACT_RECORDS = 64;
export const COMPACT_BYTES = 4 * 1024 * 1024;

/** Where the log stood when it was read: a writer of the same generation reads only what came after `end`. */
export interface StepLogAt {
  generation: number;
  end: number;
  records: number;
}

/** The run's staged change set: the manifest with the log's records applied in order. */
export interface StagedState {
  manifest: Manifest | null;
  entries: Record<string, Entry>;
  steps: Record<string, StepRecord>;
  log: StepLogAt | null;
  /** Blob bytes the log's records carry: the durable copy of blobs whose names may not be durable yet. */
  inline: Map<string, Buffer>;
}

/**
 * Reads the manifest and the log. A record whose step the manifest already names (a manifest written since,
 * with it folded in) changes nothing. Synchronous: a step reads it at open, and a thread-pool round trip per
 * open, stat, read and close costs far more than the read.
 */
export function loadStaged(stagingDir: string, root: string): StagedState {
  const manifest = loadManifest(stagingDir, root);
  const log = readStepLog(path.join(stagingDir, STEP_LOG_FILE));
  const steps: Record<string, StepRecord> = { ...(manifest?.steps ?? {}) };
  let entries = manifest?.entries ?? {};
  const inline = new Map<string, Buffer>();
  if (log !== null && log.records.length > 0) {
    entries = { ...entries };
    for (const r of log.records) {
      if (r.layer.root !== root)
        throw new StagingCorruptError(
          path.join(stagingDir, STEP_LOG_FILE),
          `step ${JSON.stringify(r.step)} staged changes for root ${r.layer.root}, not ${root}; open it with that root or use another stagingDir`,
        );
      for (const [hash, bytes] of r.blobs) inline.set(hash, bytes);
      if (steps[r.step] !== undefined) continue;
      for (const k of r.layer.removed) delete entries[k];
      Object.assign(entries, r.layer.set);
      steps[r.step] = { attempt: r.attempt, result: r.result };
    }
  }
  return {
    manifest,
    entries,
    steps,
    log: log === null ? null : { generation: log.generation, end: log.end, records: log.records.length },
    inline,
  };
}

export interface MergeOptions {
  /** False when the staging folder (blobs/, marker) may not exist yet. */
  stagingReady: boolean;
  /** The log as the step's booth read it at open, with the steps it knew: only newer records are read. */
  known?: { at: StepLogAt | null; steps: Record<string, StepRecord> };
  /** Bytes of the blobs the layer wrote, carried by the record (empty: their names are durable already). */
  blobs: Map<string, Buffer>;
  /** Durable work that must finish before the record is appended (a retry that sees the record reuses it). */
  before?: () => Promise<void>;
  fault?: FaultHook;
}

/**
 * The checkpoint write: one record appended to the log and fdatasynced, unless the log or the manifest names
 * the step already (a completed retry), in which case the log is only fdatasynced (the record a killed
 * attempt appended may not be durable yet). Returns whether this call appended it.
 */
export async function writeMerged(
  root: string,
  stagingDir: string,
  layer: Layer,
  step: string,
  record: StepRecord,
  o: MergeOptions,
): Promise<boolean> {
  if (!o.stagingReady) await makeStagingArea(stagingDir);
  if (o.before) await o.before();
  const fault = o.fault ?? (() => {});
  const file = path.join(stagingDir, STEP_LOG_FILE);
  let fd = -1;
  try {
    const appended = await withFileLock(path.join(stagingDir, `${MANIFEST_FILE}.lock`), async () => {
      fd = await openLog(file);
      const tail = readTail(root, stagingDir, fd, o.known);
      if (tail.steps.has(step)) return null;
      // Bytes past the last valid record are a dead writer's torn record: never acknowledged, so cut off.
      if (fstatSync(fd).size > tail.end) ftruncateSync(fd, tail.end);
      const bytes = encodeRecord({ step, ...record, layer, blobs: o.blobs });
      // Two writes, so a fault test can kill the process between them: a record cut short on disk.
      const half = bytes.length >> 1;
      writeAllSync(fd, bytes.subarray(0, half), tail.end);
      await fault('steplog:mid-append');
      writeAllSync(fd, bytes.subarray(half), tail.end + half);
      await fault('steplog:appended');
      return { records: tail.records + 1, end: tail.end + bytes.length };
    });
    await new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
    await fault('steplog:synced');
    if (appended !== null && (appended.records >= COMPACT_RECORDS || appended.end >= COMPACT_BYTES))
      await compact(root, stagingDir);
    return appended !== null;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/** Writes all of `bytes` at `position` (a regular file may take fewer bytes in one call). */
function writeAllSync(fd: number, bytes: Buffer, position: number): void {
  for (let done = 0; done < bytes.length; )
    done += writeSync(fd, bytes, done, bytes.length - done, position + done);
}

/** The log opened for writing; made on first use (a new file: its name made durable once, here). */
async function openLog(file: string): Promise<number> {
  try {
    return openSync(file, 'r+');
  } catch (err) {
    if (!isCode(err, 'ENOENT')) throw err;
  }
  await atomicWrite(file, stepLogHeader(), 0o600);
  return openSync(file, 'r+');
}

/**
 * Under the lock: the steps recorded so far and where the valid log ends. A log of the generation the booth
 * read at open is read from where it ended then; otherwise (a compaction replaced it, or nothing was known)
 * the manifest and the whole log are read again.
 */
function readTail(
  root: string,
  stagingDir: string,
  fd: number,
  known: MergeOptions['known'],
): { steps: Set<string>; end: number; records: number } {
  const file = path.join(stagingDir, STEP_LOG_FILE);
  const header = Buffer.alloc(STEP_LOG_HEADER_BYTES);
  const generation = headerGeneration(file, header.subarray(0, readSync(fd, header, 0, header.length, 0)));
  const at = known?.at;
  const size = fstatSync(fd).size;
  if (known !== undefined && at != null && at.generation === generation && size >= at.end) {
    const rest = Buffer.alloc(size - at.end);
    const n = rest.length > 0 ? readSync(fd, rest, 0, rest.length, at.end) : 0;
    const { records, end } = decodeRecords(file, rest.subarray(0, n), 0, at.end);
    const steps = new Set(Object.keys(known.steps));
    for (const r of records) steps.add(r.step);
    return { steps, end: n === 0 ? at.end : end, records: at.records + records.length };
  }
  const s = loadStaged(stagingDir, root);
  if (s.log === null || s.log.generation !== generation)
    throw new StagingCorruptError(file, 'it changed while its lock was held; another program writes it');
  return { steps: new Set(Object.keys(s.steps)), end: s.log.end, records: s.log.records };
}

/**
 * Folds the log into the manifest: the blobs its records carry are put in `blobs/` where a crash lost their
 * names, `blobs/` is fsynced, the manifest is written whole (atomic, fsynced), then the log is replaced by an
 * empty one of a new generation. A crash in between leaves records the manifest already names: they change
 * nothing.
 */
export async function compact(root: string, stagingDir: string): Promise<void> {
  await withFileLock(path.join(stagingDir, `${MANIFEST_FILE}.lock`), async () => {
    const s = loadStaged(stagingDir, root);
    if (s.log === null || s.log.records === 0) return;
    await materializeBlobs(stagingDir, s.inline);
    await saveManifest(stagingDir, { format: MANIFEST_FORMAT, root, entries: s.entries, steps: s.steps });
    await atomicWrite(path.join(stagingDir, STEP_LOG_FILE), stepLogHeader(), 0o600);
  });
}

/**
 * Puts every carried blob whose file is missing into `blobs/` (a crash kept its record but not its name), then
 * makes the names durable with one directory fsync: from then on `blobs/` alone holds them.
 */
export async function materializeBlobs(stagingDir: string, inline: Map<string, Buffer>): Promise<void> {
  if (inline.size === 0) return;
  const dir = path.join(stagingDir, BLOBS_DIR);
  for (const [hash, bytes] of inline) await restoreBlob(dir, hash, bytes);
  await fsyncDir(dir);
}

/** Writes a carried blob back if its file is missing; true when it did. */
export async function restoreBlob(blobsDir: string, hash: string, bytes: Buffer): Promise<boolean> {
  const file = path.join(blobsDir, hash);
  if ((await lstatOrNull(file)) !== null) return false;
  if (sha256(bytes) !== hash)
    throw new StagingCorruptError(file, 'the step log carries bytes for it that do not hash to its name');
  await atomicWrite(file, bytes, 0o600, undefined, 'data');
  return true;
}
