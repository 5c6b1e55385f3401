/**
 * A folder of tapes, one `.jbx` per run. Appends to one run's tape are serialized across processes by a lock
 * file next to it; a process whose cached writer is behind the file (another process appended since, seen
 * as a size change) reopens it, which verifies the tape and continues its chain. See docs/tape-store.md.
 */
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  type AppendedFrame,
  type AppendFrame,
  type BlobRef,
  internMessages,
  openTape,
  type SealInfo,
  STEP_CLOSING_KINDS,
  TapeSealedError,
  TapeUsageError,
  TapeWriter,
} from '../tape';
import { withFileLock } from './lock';
import { tapeFileName, tapeIdFor } from './naming';

export type StoreFsyncPolicy = 'step' | 'every-frame' | 'none';

export const DEFAULT_TAPE_DIR = '.jukebox/tapes';

export interface TapeStoreOptions {
  /** Folder of the tapes; default `$JUKEBOX_TAPE_DIR`, else `.jukebox/tapes` under the working directory. */
  dir?: string;
  /**
   * 'step' (default): each append batch that holds a step-closing frame ends with one fsync, before the lock
   * is released and before the activity that wrote it may complete. 'every-frame': fsync after each frame.
   * 'none': leave it to the OS (benchmarks, throwaway runs).
   */
  fsync?: StoreFsyncPolicy;
  /** How long to wait for another process's lock on a tape (default 30 s). */
  lockTimeoutMs?: number;
  /** Writers kept open at once; older ones are closed and reopened on demand (default 32). */
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

interface Entry {
  writer: TapeWriter | undefined;
  /** Highest `seq` of a random/clock frame on the tape, so a retried activity does not record them twice. */
  observedSeq: number;
  sealed: boolean;
  /** File size when the entry was last known to match the file. */
  size: number;
  idle?: NodeJS.Timeout;
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
  intern(messages: readonly unknown[], step: number): Promise<BlobRef | null> {
    return internMessages(this.writer, messages, { step });
  }
  async seal(outcome: Record<string, unknown>, step: number): Promise<SealInfo> {
    const info = await this.writer.seal(outcome, { step });
    this.stepClosed = false; // seal() fsyncs itself
    this.entry.sealed = true;
    return info;
  }
}

export class TapeStore {
  readonly dir: string;
  readonly fsync: StoreFsyncPolicy;
  private readonly lockTimeoutMs: number;
  private readonly maxOpen: number;
  private readonly idleCloseMs: number;
  private dirReady: Promise<void> | undefined;
  private readonly entries = new Map<string, Entry>();
  // Same-process callers queue here first: the lock file cannot tell two callers of one process apart.
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(options: TapeStoreOptions = {}) {
    this.dir = options.dir ? path.resolve(options.dir) : tapeDirFromEnv();
    this.fsync = options.fsync ?? 'step';
    this.lockTimeoutMs = options.lockTimeoutMs ?? 30_000;
    this.maxOpen = options.maxOpenTapes ?? 32;
    this.idleCloseMs = options.idleCloseMs ?? 5_000;
  }

  pathFor(workflowId: string, runId: string): string {
    return path.join(this.dir, tapeFileName(workflowId, runId));
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
   * makes what it appended durable per the fsync policy before releasing it.
   */
  withTape<T>(run: RunIdentity, fn: (session: TapeSession) => Promise<T>): Promise<T> {
    const file = this.pathFor(run.workflowId, run.runId);
    const previous = this.queues.get(file) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      // The lock file lives next to the tape, so the folder must exist before the first lock.
      .then(() => (this.dirReady ??= mkdir(this.dir, { recursive: true }).then(() => undefined)))
      .then(() =>
        withFileLock(`${file}.lock`, () => this.locked(file, run, fn), { timeoutMs: this.lockTimeoutMs }),
      );
    this.queues.set(file, next);
    void next
      .catch(() => {})
      .then(() => {
        if (this.queues.get(file) === next) this.queues.delete(file);
      });
    return next;
  }

  private async locked<T>(file: string, run: RunIdentity, fn: (s: TapeSession) => Promise<T>): Promise<T> {
    const entry = await this.current(file, run);
    const session = new TapeSession(file, entry);
    try {
      const result = await fn(session);
      if (session.needsSync && this.fsync === 'step') await entry.writer?.sync();
      if (entry.sealed) await this.evict(file);
      else {
        entry.size = entry.writer?.byteLength ?? entry.size;
        this.closeWhenIdle(file, entry);
      }
      return result;
    } catch (err) {
      // The writer may be poisoned or ahead of the file; the next caller starts from what is on disk.
      await this.evict(file);
      throw err;
    }
  }

  private async current(file: string, run: RunIdentity): Promise<Entry> {
    const size = await stat(file).then(
      (s) => s.size,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      },
    );
    const cached = this.entries.get(file);
    if (cached) clearTimeout(cached.idle);
    if (cached && size === cached.size) {
      this.entries.delete(file);
      this.entries.set(file, cached); // most recently used last
      return cached;
    }
    if (cached) await this.evict(file);
    const writerOptions = {
      fsync: this.fsync === 'every-frame' ? ('every-frame' as const) : ('none' as const),
    };
    let entry: Entry;
    if (size === undefined) {
      await mkdir(this.dir, { recursive: true });
      const writer = await TapeWriter.open(
        file,
        {
          tapeId: tapeIdFor(run.workflowId, run.runId),
          createdAtMs: Date.now(),
          workflowType: run.workflowType,
          workflowId: run.workflowId,
          runId: run.runId,
          taskQueue: run.taskQueue,
          agentCodeHash: run.agentCodeHash,
        },
        writerOptions,
      );
      entry = { writer, observedSeq: -1, sealed: false, size: writer.byteLength };
    } else {
      const scan = scanTape(file);
      if (scan.sealed) entry = { writer: undefined, observedSeq: scan.observedSeq, sealed: true, size };
      else {
        const writer = await TapeWriter.reopen(file, writerOptions);
        const expected = tapeIdFor(run.workflowId, run.runId);
        if (writer.header.tapeId !== expected) {
          await writer.close();
          throw new TapeUsageError(`tape ${file} belongs to ${writer.header.tapeId}, not to run ${expected}`);
        }
        entry = { writer, observedSeq: scan.observedSeq, sealed: false, size: writer.byteLength };
      }
    }
    this.entries.set(file, entry);
    while (this.entries.size > this.maxOpen) {
      const oldest = this.entries.keys().next().value as string;
      if (this.queues.has(oldest) && oldest !== file) {
        // Busy in this process: close it later, when its turn comes round again.
        break;
      }
      await this.evict(oldest);
    }
    return entry;
  }

  private closeWhenIdle(file: string, entry: Entry): void {
    clearTimeout(entry.idle);
    // unref: an idle tape must not keep a finished process alive.
    entry.idle = setTimeout(() => {
      if (this.entries.get(file) !== entry) return;
      const busy = this.queues.get(file) ?? Promise.resolve();
      void busy
        .catch(() => {})
        .then(() => {
          if (this.entries.get(file) === entry && !this.queues.has(file)) void this.evict(file);
        });
    }, this.idleCloseMs);
    entry.idle.unref();
  }

  private async evict(file: string): Promise<void> {
    const e = this.entries.get(file);
    this.entries.delete(file);
    clearTimeout(e?.idle);
    await e?.writer?.close().catch(() => {});
  }

  /** Closes every open writer (worker shutdown). */
  async close(): Promise<void> {
    for (const file of [...this.entries.keys()]) await this.evict(file);
  }
}

/** One verifying pass: is the tape sealed, and which observation frames does it already hold. */
function scanTape(file: string): { sealed: boolean; observedSeq: number } {
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
