/**
 * Tapes in an S3-compatible object store, for runs whose activities execute on workers on different hosts.
 * A tape is a sequence of immutable segment objects named by the byte offset they start at; concatenated in
 * key order they are exactly the `.jbx` file of the run, one chain from header to seal (src/recorder/tape/FORMAT.md,
 * "Tapes in an object store"). A writer appends by creating the segment at the offset where the tape ends,
 * with `If-None-Match: *`: of two hosts racing for one offset exactly one wins, and the other reads the
 * winner's segment, continues the chain after it and tries again at the new end. No lock, no lease, no clock.
 *
 * Each process keeps a private local copy of the tapes it writes (a cache folder), so an uncontended append
 * costs one PUT and no read.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { appendFile, open, rm, truncate } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TapeContentionError, TapeSegmentsError } from './errors';
import { tapeFileName, tapeIdFor } from './naming';
import type { ObjectBucket } from './objectBucket';
import {
  type RunIdentity,
  type StoreFsyncPolicy,
  scanTape,
  type TapeCreateOptions,
  TapeSession,
  type TapeStore,
  tapeHeaderFor,
  type WithTapeOptions,
} from './store';
import { TapeUsageError, TapeWriter } from './tape';
import { type Entry, WriterPool } from './writerPool';

/** Digits of a segment's offset in its key: zero-padded so that key order is offset order. */
export const SEGMENT_OFFSET_DIGITS = 16;
const SEGMENT_SUFFIX = '.seg';
/** Segment GETs in flight at once when a copy catches up with (or downloads) a tape. */
const FETCH_CONCURRENCY = 16;

export interface ObjectTapeStoreOptions {
  bucket: ObjectBucket;
  /** Key prefix of the tapes, `''` or ending in `/` (default `tapes/`). */
  prefix?: string;
  /** Folder for this process's local copies; default a fresh temporary folder, removed by close(). */
  cacheDir?: string;
  /** Appends lost to other writers before giving up with TapeContentionError (default 50). */
  maxAttempts?: number;
  /** Local copies kept open at once (default 32); see TapeStoreOptions.maxOpenTapes. */
  maxOpenTapes?: number;
}

/** The key of the segment that starts at `offset` of the tape stored under `tapeKey`. */
export function segmentKey(tapeKey: string, offset: number): string {
  return `${tapeKey}/${String(offset).padStart(SEGMENT_OFFSET_DIGITS, '0')}${SEGMENT_SUFFIX}`;
}

/** The offset a segment key names, or undefined for a key that is not a segment of `tapeKey`. */
export function segmentOffset(tapeKey: string, key: string): number | undefined {
  const m = /^(\d+)\.seg$/.exec(key.slice(tapeKey.length + 1));
  if (!key.startsWith(`${tapeKey}/`) || !m || m[1]!.length !== SEGMENT_OFFSET_DIGITS) return undefined;
  return Number(m[1]);
}

export class ObjectTapeStore implements TapeStore {
  readonly bucket: ObjectBucket;
  readonly prefix: string;
  readonly cacheDir: string;
  /** Every append is durable once its PUT returns; there is nothing to fsync locally. */
  readonly fsync: StoreFsyncPolicy = 'step';
  private readonly ownsCache: boolean;
  private readonly maxAttempts: number;
  /** The open local copies, within maxOpenTapes; one a caller appends through is never closed under it. */
  readonly writers: WriterPool;
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(options: ObjectTapeStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? 'tapes/';
    if (this.prefix !== '' && !this.prefix.endsWith('/'))
      throw new TapeUsageError(`object store prefix "${this.prefix}" must be empty or end with "/"`);
    this.ownsCache = !options.cacheDir;
    this.cacheDir = options.cacheDir ?? mkdtempSync(path.join(os.tmpdir(), 'jukebox-tape-cache-'));
    mkdirSync(this.cacheDir, { recursive: true });
    this.maxAttempts = options.maxAttempts ?? 50;
    this.writers = new WriterPool(
      options.maxOpenTapes !== undefined ? { maxOpen: options.maxOpenTapes } : {},
    );
  }

  get location(): string {
    return this.bucket.url(this.prefix);
  }

  /** The object key prefix of a run's tape: `<prefix><workflowId>--<runId>.jbx`. */
  keyFor(workflowId: string, runId: string): string {
    return `${this.prefix}${tapeFileName(workflowId, runId)}`;
  }

  pathFor(workflowId: string, runId: string): string {
    return path.join(this.cacheDir, tapeFileName(workflowId, runId));
  }

  async has(workflowId: string, runId: string): Promise<boolean> {
    return this.bucket.exists(segmentKey(this.keyFor(workflowId, runId), 0));
  }

  async list(): Promise<string[]> {
    const folders = await this.bucket.listFolders(this.prefix);
    return folders
      .map((f) => f.replace(/\/$/, ''))
      .filter((k) => k.endsWith('.jbx'))
      .sort()
      .map((k) => this.bucket.url(k));
  }

  /**
   * Copies a whole tape (every segment, in order) into `file`, checking that the segments line up; the
   * result is an ordinary `.jbx` that every reader, `jbx verify` and `jbx replay` included, takes as is.
   */
  async download(tapeKey: string, file: string): Promise<{ segments: number; bytes: number }> {
    await rm(file, { force: true });
    mkdirSync(path.dirname(file), { recursive: true });
    const got = await this.catchUp(tapeKey, file, 0);
    if (got.segments === 0)
      throw new TapeSegmentsError(this.bucket.url(tapeKey), 'the store holds no segment of this tape');
    return got;
  }

  withTape<T>(
    run: RunIdentity,
    fn: (session: TapeSession) => Promise<T>,
    create?: TapeCreateOptions,
    // deferSync needs no handling: an append is durable once its PUT returns, there is no fsync to defer.
    _options?: WithTapeOptions,
  ): Promise<T> {
    const file = this.pathFor(run.workflowId, run.runId);
    const previous = this.queues.get(file) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.appendRetrying(file, run, fn, create));
    this.queues.set(file, next);
    void next
      .catch(() => {})
      .then(() => {
        if (this.queues.get(file) === next) this.queues.delete(file);
      });
    return next;
  }

  private async appendRetrying<T>(
    file: string,
    run: RunIdentity,
    fn: (s: TapeSession) => Promise<T>,
    create?: TapeCreateOptions,
  ): Promise<T> {
    const tapeKey = this.keyFor(run.workflowId, run.runId);
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const entry = await this.current(tapeKey, file, run, create);
      const start = entry.size;
      const session = new TapeSession(file, entry);
      let result: T;
      let end: number;
      try {
        result = await fn(session);
        await entry.writer?.flushed();
        end = entry.writer?.byteLength ?? start;
      } catch (err) {
        // The local copy may hold frames the store never got: start over from the store next time.
        await this.forget(file, entry);
        throw err;
      }
      if (end === start) {
        // Nothing to write, so no conditional PUT tells whether fn saw the whole tape: ask whether anything
        // starts where this copy ends, and if so run fn again on the longer tape.
        let newer: boolean;
        try {
          newer = !entry.sealed && (await this.bucket.exists(segmentKey(tapeKey, start)));
        } catch (err) {
          this.writers.give(file, entry);
          throw err;
        }
        if (!newer) {
          if (entry.sealed) await this.writers.retire(file, entry);
          else this.writers.give(file, entry);
          return result;
        }
        await this.writers.drop(file, entry);
        continue;
      }
      let outcome: 'created' | 'exists';
      try {
        const bytes = await readRange(file, start, end);
        outcome = await this.bucket.putIfAbsent(segmentKey(tapeKey, start), bytes);
      } catch (err) {
        await this.forget(file, entry);
        throw err;
      }
      if (outcome === 'created') {
        entry.size = end;
        if (entry.sealed) await this.writers.retire(file, entry);
        else this.writers.give(file, entry);
        return result;
      }
      // Another host appended at this offset first: drop what fn wrote, read theirs, run fn again after it.
      await this.writers.drop(file, entry);
      await truncate(file, start);
      // Spread the retries of hosts that keep colliding.
      if (attempt > 2) await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
    }
    throw new TapeContentionError(this.bucket.url(tapeKey), this.maxAttempts);
  }

  /**
   * The run's tape, held for this caller: the open local copy, else the copy brought up to date with the store
   * and resumed from the state its last writer parked (O(1)) or read and verified.
   */
  private async current(
    tapeKey: string,
    file: string,
    run: RunIdentity,
    create?: TapeCreateOptions,
  ): Promise<Entry> {
    const open = this.writers.take(file);
    if (open) return open;
    await this.writers.closing(file);
    const size = await fileSize(file);
    const { bytes } = await this.catchUp(tapeKey, file, size ?? 0);
    const parked = this.writers.unpark(file);
    const known = parked && parked.size === bytes ? parked : undefined;
    if (known?.sealed)
      return { writer: undefined, observedSeq: known.observedSeq, sealed: true, size: bytes };
    return this.writers.openWith(file, async () => {
      if (bytes === 0) {
        // A new tape: its header goes to the store as part of segment 0, with the first frames.
        await rm(file, { force: true });
        const writer = await TapeWriter.open(file, tapeHeaderFor(run, create), { fsync: 'none' });
        return { writer, observedSeq: -1, sealed: false, size: 0 };
      }
      if (known?.state) {
        const writer = await TapeWriter.resume(file, known.state, { fsync: 'none' });
        if (writer.recoveredTornTail === null && writer.byteLength === bytes)
          return { writer, observedSeq: known.observedSeq, sealed: false, size: bytes };
        await writer.close();
      }
      const scan = scanTape(file);
      if (scan.sealed) return { writer: undefined, observedSeq: scan.observedSeq, sealed: true, size: bytes };
      const writer = await TapeWriter.reopen(file, { fsync: 'none' });
      const expected = tapeIdFor(run.workflowId, run.runId);
      if (writer.header.tapeId !== expected) {
        await writer.close();
        throw new TapeUsageError(
          `tape ${this.bucket.url(tapeKey)} belongs to ${writer.header.tapeId}, not to run ${expected}`,
        );
      }
      return { writer, observedSeq: scan.observedSeq, sealed: false, size: bytes };
    });
  }

  /**
   * Appends to `file` (which holds the tape's first `from` bytes) every segment the store has from `from`
   * on, checking that each starts where the previous ended. Returns the tape's length in the store.
   */
  private async catchUp(
    tapeKey: string,
    file: string,
    from: number,
  ): Promise<{ segments: number; bytes: number }> {
    const startAfter = from > 0 ? segmentKey(tapeKey, from - 1) : undefined;
    const keys = await this.bucket.listKeys(`${tapeKey}/`, startAfter);
    let end = from;
    let segments = 0;
    for (const key of keys)
      if (segmentOffset(tapeKey, key) === undefined)
        throw new TapeSegmentsError(this.bucket.url(tapeKey), `object ${key} is not a segment key`);
    // GETs run FETCH_CONCURRENCY at a time; bytes are appended, and offsets checked, in key order.
    for (let i = 0; i < keys.length; i += FETCH_CONCURRENCY) {
      const batch = keys.slice(i, i + FETCH_CONCURRENCY);
      const bodies = await Promise.all(batch.map((k) => this.bucket.get(k)));
      for (const [j, bytes] of bodies.entries()) {
        const key = batch[j]!;
        const offset = segmentOffset(tapeKey, key)!;
        if (offset !== end)
          throw new TapeSegmentsError(
            this.bucket.url(tapeKey),
            offset > end
              ? `bytes ${end}..${offset} are missing (no segment starts at ${end}; the next one, ${key}, starts at ${offset})`
              : `segment ${key} overlaps the segment before it, which ends at ${end}`,
          );
        if (bytes.byteLength === 0)
          throw new TapeSegmentsError(this.bucket.url(tapeKey), `segment ${key} is empty`);
        await appendFile(file, bytes);
        end += bytes.byteLength;
        segments++;
      }
    }
    return { segments, bytes: end };
  }

  /** Drops a held entry and its local copy, which may hold frames the store never got. */
  private async forget(file: string, entry: Entry): Promise<void> {
    await this.writers.drop(file, entry);
    await rm(file, { force: true });
  }

  /** Closes the local copies (and removes the cache folder this store made). */
  async close(): Promise<void> {
    await this.writers.closeAll();
    this.bucket.destroy();
    if (this.ownsCache) rmSync(this.cacheDir, { recursive: true, force: true });
  }
}

async function fileSize(file: string): Promise<number | undefined> {
  const fh = await open(file, 'r').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!fh) return undefined;
  try {
    return (await fh.stat()).size;
  } finally {
    await fh.close();
  }
}

async function readRange(file: string, start: number, end: number): Promise<Uint8Array> {
  const fh = await open(file, 'r');
  try {
    const out = Buffer.allocUnsafe(end - start);
    let got = 0;
    while (got < out.byteLength) {
      const { bytesRead } = await fh.read(out, got, out.byteLength - got, start + got);
      if (bytesRead === 0) throw new Error(`tape copy ${file} ended at ${start + got}, before ${end}`);
      got += bytesRead;
    }
    return out;
  } finally {
    await fh.close();
  }
}
