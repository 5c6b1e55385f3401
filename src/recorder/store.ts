/**
 * A folder of tapes, one `.jbx` per run. Appends to one run's tape are serialized across processes by a lock
 * file next to it; a process whose cached writer is behind the file (another process appended since, seen
 * as a size change) reopens it, which verifies the tape and continues its chain. See docs/tape-store.md.
 */
import { existsSync, statSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { internRemembered } from './internMemo';
import { withFileLock } from './lock';
import { tapeFileName, tapeIdFor } from './naming';
import {
  type AppendedFrame,
  type AppendFrame,
  type BlobRef,
  type ChunkBlobs,
  openTape,
  type SealInfo,
  STEP_CLOSING_KINDS,
  type TapeHeader,
  TapeSealedError,
  TapeUsageError,
  TapeWriter,
} from './tape';
import type { RecorderTimings } from './timings';
import { type Entry, WriterPool } from './writerPool';
import { WriterSync } from './writerSync';

export type { Entry } from './writerPool';

export type StoreFsyncPolicy = 'step' | 'every-frame' | 'none';

export const DEFAULT_TAPE_DIR = '.jukebox/tapes';

export interface TapeStoreOptions {
  /** Folder of the tapes; default `$JUKEBOX_TAPE_DIR`, else `.jukebox/tapes` under the working directory. */
  dir?: string;
  /**
   * 'step' (default): an append batch that holds a step-closing frame is fsynced (fdatasync) before the
   * activity that wrote it may complete; batches of several steps that finish together share one fsync, and
   * the batches of local steps share the one their workflow task's barrier issues (docs/tape-store.md).
   * 'every-frame': fsync after each frame. 'none': leave it to the OS (benchmarks, throwaway runs).
   */
  fsync?: StoreFsyncPolicy;
  /** Counts flushes and fsyncs with their time, for the e2e bench's per-step breakdown. */
  timings?: RecorderTimings;
  /**
   * Local steps' frames wait for their workflow task's barrier, but never longer than this (default 2 s):
   * the SDK heartbeats a workflow task that runs local activities after 80% of its timeout (8 s by default),
   * which puts their results into the history early, so their frames must be durable before that.
   */
  localSyncWithinMs?: number;
  /** How long to wait for another process's lock on a tape (default 30 s). */
  lockTimeoutMs?: number;
  /**
   * Tape writers (open files) kept open at once (default 32). The least recently used idle one is closed for a
   * tape that needs one; a writer a step is appending through is never closed, so with every writer busy a step
   * waits for one to be given back (docs/tape-store.md, "At the open-file limit").
   */
  maxOpenTapes?: number;
  /** A tape nobody appended to for this long is closed (default 5 s); it reopens on the next append. */
  idleCloseMs?: number;
}

export interface RunIdentity {
  workflowId: string;
  runId: string;
  workflowType: string;
  taskQueue: string;
  agentCodeHash: string;
}

/** How a withTape call wants its appends made durable (stores that cannot defer simply sync at once). */
export interface WithTapeOptions {
  /**
   * A local step's frames: written now, made durable by its workflow task's barrier (TapeStore.barrier) or
   * the store's time limit, whichever comes first, instead of by an fsync of their own.
   */
  deferSync?: boolean;
}

export function tapeDirFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.JUKEBOX_TAPE_DIR?.trim() || DEFAULT_TAPE_DIR);
}

/** What a caller may do with a run's tape while it holds the lock. */
export class TapeSession {
  private stepClosed = false;
  constructor(
    readonly path: string,
    private readonly entry: Entry,
  ) {}

  get sealed(): boolean {
    return this.entry.sealed;
  }
  get observedSeq(): number {
    return this.entry.observedSeq;
  }
  markObserved(seq: number): void {
    if (seq > this.entry.observedSeq) this.entry.observedSeq = seq;
  }
  get writer(): TapeWriter {
    const w = this.entry.writer;
    if (!w || this.entry.sealed)
      throw new TapeSealedError('the run already has an outcome; nothing may be recorded after the seal', {
        file: this.path,
        frameIndex: null,
        offset: this.entry.size,
        recoverableFrames: 0,
      });
    return w;
  }
  get needsSync(): boolean {
    return this.stepClosed;
  }

  append(frame: AppendFrame): Promise<AppendedFrame> {
    if (STEP_CLOSING_KINDS.has(frame.kind)) this.stepClosed = true;
    return this.writer.append(frame);
  }
  putValue(value: unknown, step: number): Promise<BlobRef> {
    return this.writer.putValue(value, { step });
  }
  putBlob(bytes: Uint8Array, step: number): Promise<BlobRef> {
    return this.writer.putBlob(bytes, { step });
  }
  /** Where a batch of streamed chunks stores its blobs (its entries as one only in a format-3 tape). */
  chunkBlobs(step: number): ChunkBlobs {
    const w = this.writer;
    return {
      blob: (bytes) => w.putBlob(bytes, { step }),
      value: w.version >= 3 ? (value) => w.putValue(value, { step }) : undefined,
    };
  }
  intern(messages: readonly unknown[], step: number): Promise<BlobRef | null> {
    return internRemembered(this.writer, messages, { step });
  }
  async seal(outcome: Record<string, unknown>, step: number): Promise<SealInfo> {
    const info = await this.writer.seal(outcome, { step });
    this.stepClosed = false; // seal() fsyncs itself
    this.entry.sealed = true;
    return info;
  }
}

/** Header fields a run's tape is created with beyond its identity: a fork names its parent here. */
export type TapeCreateOptions = Pick<TapeHeader, 'parent' | 'meta'>;

/**
 * Where runs' tapes live. Every worker of a run must reach the same store: the folder store (default) when
 * they share a filesystem, the object store (objectStore.ts) when they run on different hosts.
 */
export interface TapeStore {
  /** The folder, or `s3://bucket/prefix/` of an object store: for messages and listings. */
  readonly location: string;
  readonly fsync: StoreFsyncPolicy;
  /** A local file holding the run's tape as this process last wrote or read it. */
  pathFor(workflowId: string, runId: string): string;
  /** Every tape in the store: local paths (folder) or `s3://` URLs (object store). */
  list(): Promise<string[]>;
  /** Whether the run has a tape in the store (withTape would create one). */
  has(workflowId: string, runId: string): Promise<boolean>;
  /**
   * Runs `fn` with the run's tape to itself, creating the tape (with `create`'s header fields) on first use;
   * what `fn` appended is durable in the store when this resolves.
   */
  withTape<T>(
    run: RunIdentity,
    fn: (session: TapeSession) => Promise<T>,
    create?: TapeCreateOptions,
    options?: WithTapeOptions,
  ): Promise<T>;
  /**
   * Makes durable what deferSync calls appended to the run's tape (a workflow task's barrier after local
   * steps). Stores that never defer need not implement it.
   */
  barrier?(workflowId: string, runId: string): Promise<void>;
  close(): Promise<void>;
}

/** A folder of tapes shared by the processes of one host (or of hosts that share the filesystem). */
export class FolderTapeStore implements TapeStore {
  readonly dir: string;
  readonly fsync: StoreFsyncPolicy;
  private readonly lockTimeoutMs: number;
  private readonly localSyncWithinMs: number;
  private readonly timings: RecorderTimings | undefined;
  private dirReady: Promise<void> | undefined;
  // Per open writer: which of its append batches an fsync covers (group commit, barriers of local steps).
  private readonly syncs = new WeakMap<TapeWriter, WriterSync>();
  // Same-process callers queue here first: the lock file cannot tell two callers of one process apart.
  private readonly queues = new Map<string, Promise<unknown>>();
  /** The open writers, within maxOpenTapes; a writer closing fsyncs what it still owes first. */
  readonly writers: WriterPool;

  constructor(options: TapeStoreOptions = {}) {
    this.dir = options.dir ? path.resolve(options.dir) : tapeDirFromEnv();
    this.fsync = options.fsync ?? 'step';
    this.lockTimeoutMs = options.lockTimeoutMs ?? 30_000;
    this.localSyncWithinMs = options.localSyncWithinMs ?? 2_000;
    this.timings = options.timings;
    this.writers = new WriterPool({
      ...(options.maxOpenTapes !== undefined ? { maxOpen: options.maxOpenTapes } : {}),
      ...(options.idleCloseMs !== undefined ? { idleCloseMs: options.idleCloseMs } : {}),
      // What was written but not fsynced yet (local steps before their barrier, an fsync still owed) reaches the
      // disk before the writer closes; a step still waiting on a sync that fails is failed, retryably.
      beforeClose: async (writer) => {
        await this.syncs.get(writer)?.close();
      },
    });
  }

  get location(): string {
    return this.dir;
  }

  pathFor(workflowId: string, runId: string): string {
    return path.join(this.dir, tapeFileName(workflowId, runId));
  }

  async has(workflowId: string, runId: string): Promise<boolean> {
    return existsSync(this.pathFor(workflowId, runId));
  }

  /** Every tape in the folder, by path; an absent folder has none. */
  async list(): Promise<string[]> {
    const names = await readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [] as string[];
      throw err;
    });
    return names
      .filter((n) => n.endsWith('.jbx'))
      .sort()
      .map((n) => path.join(this.dir, n));
  }

  /**
   * Runs `fn` holding the run's tape exclusively (across processes), creating the tape on first use, and
   * makes what it appended durable per the fsync policy before resolving. The fsync runs after the lock is
   * released, so callers that appended meanwhile share the next one instead of queueing one each.
   */
  async withTape<T>(
    run: RunIdentity,
    fn: (session: TapeSession) => Promise<T>,
    create?: TapeCreateOptions,
    options: WithTapeOptions = {},
  ): Promise<T> {
    const file = this.pathFor(run.workflowId, run.runId);
    const previous = this.queues.get(file) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      // The lock file lives next to the tape, so the folder must exist before the first lock.
      .then(() => (this.dirReady ??= mkdir(this.dir, { recursive: true }).then(() => undefined)))
      .then(() =>
        withFileLock(`${file}.lock`, () => this.locked(file, run, fn, create), {
          timeoutMs: this.lockTimeoutMs,
          ownerLink: true,
        }),
      );
    this.queues.set(file, next);
    void next
      .catch(() => {})
      .then(() => {
        if (this.queues.get(file) === next) this.queues.delete(file);
      });
    const { result, sync, gen, needsSync } = await next;
    if (sync && needsSync && this.fsync === 'step') {
      if (options.deferSync) sync.within(this.localSyncWithinMs);
      else await sync.through(gen);
    }
    return result;
  }

  /**
   * The barrier of a workflow task that ran local steps: fsyncs what they wrote to the run's tape in this
   * process, so every step the task's completion records in the history is on the disk first. A no-op when
   * nothing waits for an fsync. A writer closed since synced what it held before closing; one closing now is
   * waited for.
   */
  async barrier(workflowId: string, runId: string): Promise<void> {
    const file = this.pathFor(workflowId, runId);
    const writer = this.writers.peek(file)?.writer;
    const sync = writer && this.syncs.get(writer);
    if (sync?.pending) {
      if (this.timings) this.timings.barriers++;
      await sync.through();
      return;
    }
    await this.writers.closing(file);
  }

  private async locked<T>(
    file: string,
    run: RunIdentity,
    fn: (s: TapeSession) => Promise<T>,
    create?: TapeCreateOptions,
  ): Promise<{ result: T; sync: WriterSync | undefined; gen: number; needsSync: boolean }> {
    const entry = await this.current(file, run, create);
    const session = new TapeSession(file, entry);
    const before = entry.writer?.byteLength;
    try {
      // One write for everything fn appends, instead of a file-system round trip per frame and blob.
      entry.writer?.hold();
      const result = await fn(session);
      await entry.writer?.release();
      const sync = entry.writer && this.syncOf(entry.writer);
      const gen =
        sync && entry.writer?.byteLength !== before
          ? sync.wrote(session.needsSync && this.fsync === 'step')
          : 0;
      entry.size = entry.writer?.byteLength ?? entry.size;
      // seal() fsyncs the whole tape itself, earlier deferred frames included.
      if (entry.sealed) {
        sync?.covered();
        await this.writers.retire(file, entry);
      } else this.writers.give(file, entry);
      return { result, sync, gen, needsSync: session.needsSync };
    } catch (err) {
      // The writer may be poisoned or ahead of the file; the next caller starts from what is on disk.
      await this.writers.drop(file, entry);
      throw err;
    }
  }

  /**
   * The run's tape, held for this caller: the open writer when the file is as it left it, else one resumed
   * from the state its last writer parked (O(1)), else one that reads and verifies the file (another process
   * appended, or this one never had it open).
   */
  private async current(file: string, run: RunIdentity, create?: TapeCreateOptions): Promise<Entry> {
    // Its last frames must be on the disk before anything reads the file or takes over from it.
    await this.writers.closing(file);
    // Synchronous for the same reason as the lock file: a thread-pool round trip per step for a cached stat.
    const size = statSync(file, { throwIfNoEntry: false })?.size;
    const open = this.writers.take(file);
    if (open && size === open.size) return open;
    if (open) await this.writers.drop(file, open);
    const parked = this.writers.unpark(file);
    const known = parked && size === parked.size ? parked : undefined;
    if (known?.sealed)
      return { writer: undefined, observedSeq: known.observedSeq, sealed: true, size: known.size };
    const writerOptions = {
      fsync: this.fsync === 'every-frame' ? ('every-frame' as const) : ('none' as const),
    };
    return this.writers.openWith(file, async () => {
      if (size === undefined) {
        await mkdir(this.dir, { recursive: true });
        const writer = await TapeWriter.open(file, tapeHeaderFor(run, create), writerOptions);
        return { writer, observedSeq: -1, sealed: false, size: writer.byteLength };
      }
      if (known?.state) {
        const writer = await TapeWriter.resume(file, known.state, writerOptions);
        // resume() falls back to reading the file when it changed since; then its observations are read too.
        if (writer.recoveredTornTail === null && writer.byteLength === known.size)
          return { writer, observedSeq: known.observedSeq, sealed: false, size: writer.byteLength };
        await writer.close();
      }
      const scan = scanTape(file);
      if (scan.sealed) return { writer: undefined, observedSeq: scan.observedSeq, sealed: true, size };
      const writer = await TapeWriter.reopen(file, writerOptions);
      const expected = tapeIdFor(run.workflowId, run.runId);
      if (writer.header.tapeId !== expected) {
        await writer.close();
        throw new TapeUsageError(`tape ${file} belongs to ${writer.header.tapeId}, not to run ${expected}`);
      }
      return { writer, observedSeq: scan.observedSeq, sealed: false, size: writer.byteLength };
    });
  }

  private syncOf(writer: TapeWriter): WriterSync {
    let sync = this.syncs.get(writer);
    if (!sync) {
      sync = new WriterSync(writer, this.timings);
      this.syncs.set(writer, sync);
    }
    return sync;
  }

  /** Closes every open writer (worker shutdown). */
  async close(): Promise<void> {
    await this.writers.closeAll();
  }
}

/** `new TapeStore(options)` keeps meaning the default store, the folder; `TapeStore` as a type is the interface. */
export const TapeStore = FolderTapeStore;

/** The header of a run's new tape: its identity, plus a fork's parent and metadata. */
export function tapeHeaderFor(run: RunIdentity, create?: TapeCreateOptions): TapeHeader {
  return {
    tapeId: tapeIdFor(run.workflowId, run.runId),
    createdAtMs: Date.now(),
    workflowType: run.workflowType,
    workflowId: run.workflowId,
    runId: run.runId,
    taskQueue: run.taskQueue,
    agentCodeHash: run.agentCodeHash,
    ...(create?.parent ? { parent: create.parent } : {}),
    ...(create?.meta ? { meta: create.meta } : {}),
  };
}

/** One verifying pass: is the tape sealed, and which observation frames does it already hold. */
export function scanTape(file: string): { sealed: boolean; observedSeq: number } {
  const cursor = openTape(file, { keepBlobs: false });
  let observedSeq = -1;
  try {
    for (let f = cursor.next(); f; f = cursor.next()) {
      if (f.kind === 'random' || f.kind === 'clock') {
        const seq = (f.payload as { seq?: unknown }).seq;
        if (typeof seq === 'number' && seq > observedSeq) observedSeq = seq;
      }
    }
    return { sealed: cursor.sealed, observedSeq };
  } finally {
    cursor.close();
  }
}
