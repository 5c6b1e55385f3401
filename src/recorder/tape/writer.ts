/**
 * Append-only tape writer. State that the chain depends on (offset, chain value, counts) advances
 * synchronously when a frame is accepted, and the bytes go to disk through one ordered queue, so callers may
 * fire appends without awaiting each and still get a valid tape; the first I/O failure poisons the writer.
 */
import { fstatSync, writeSync } from 'node:fs';
import { type FileHandle, link, open as openFile, truncate, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { BlobRef } from './blobRef';
import { compressBlob } from './compressedBlob';
import { openTape, type SealInfo, type TornTail } from './cursor';
import { TapeLimitError, TapeSealedError, TapeUsageError, TapeWriterUnavailableError } from './errors';
import { encodeFrame, frameHeadBytes } from './frame';
import { blake3, toHex } from './hash';
import { encodeHeader, FORMAT_VERSION, type FormatVersion, headerProblem, type TapeHeader } from './header';
import {
  ENCODING_MSGPACK,
  ENCODING_RAW,
  encodingCode,
  FRAME_KINDS,
  type FrameKind,
  kindCode,
  type PayloadEncoding,
  STEP_CLOSING_KINDS,
} from './kinds';
import { resolveLimits, type TapeLimits } from './limits';
import { encodePayloadShared, scanPayload } from './payload';
import { payloadProblem } from './schema';
import { encodeSeal } from './seal';

/**
 * When the writer fsyncs. 'step': after each frame of a step-closing kind (FORMAT.md), so a step's result is
 * durable before the activity that produced it returns. 'every-frame': after every frame. 'none': only on
 * sync() and seal().
 */
export type FsyncPolicy = 'step' | 'every-frame' | 'none';

export interface WriterOptions {
  fsync?: FsyncPolicy;
  limits?: Partial<TapeLimits>;
  /** Clock for `recordedAtUs`, microseconds since the epoch; injectable for deterministic tests. */
  nowUs?: () => number;
  /**
   * Store blobs compressed where that saves an eighth or more (default true). Only a version-2 or later tape can
   * hold compressed blobs; a version-1 tape being continued never gets them.
   */
  compress?: boolean;
  /**
   * The format version of a tape this writer creates (default FORMAT_VERSION, 3). Versions 1 and 2 are for tapes
   * that readers from before version 2 or 3 must read. A tape that exists keeps its own version.
   */
  formatVersion?: FormatVersion;
}

export interface AppendFrame {
  kind: FrameKind;
  step: number;
  /** A MessagePack-encodable map (BlobRefs allowed), or bytes with `encoding: 'raw'`. */
  payload: unknown;
  encoding?: PayloadEncoding;
  recordedAtUs?: number;
}

export interface AppendedFrame {
  index: number;
  offset: number;
  length: number;
  payloadHash: string;
  chain: string;
}

/**
 * An AppendedFrame whose two hashes become hex when read: hardly any caller reads them, and making both strings
 * was a twentieth of an append.
 */
class AppendedFrameInfo implements AppendedFrame {
  constructor(
    readonly index: number,
    readonly offset: number,
    readonly length: number,
    private readonly hashBytes: Uint8Array,
    private readonly chainBytes: Uint8Array,
  ) {}

  get payloadHash(): string {
    return toHex(this.hashBytes);
  }

  get chain(): string {
    return toHex(this.chainBytes);
  }

  toJSON(): AppendedFrame {
    const { index, offset, length, payloadHash, chain } = this;
    return { index, offset, length, payloadHash, chain };
  }
}

export interface BlobOptions {
  step?: number;
  /** What the bytes are, for readers: 'raw' (default) or 'msgpack'. */
  encoding?: PayloadEncoding;
}

/**
 * What continuing a tape takes without reading it again (TapeWriter.resume): the state a closed writer left,
 * valid for as long as the file stays exactly `offset` bytes long.
 */
export interface TapeWriterState {
  readonly header: TapeHeader;
  readonly version: FormatVersion;
  readonly chain: Uint8Array;
  readonly offset: number;
  readonly frames: number;
  readonly maxStep: number;
  readonly blobs: ReadonlySet<string>;
}

const WRITER_ONLY_KINDS: ReadonlySet<FrameKind> = new Set<FrameKind>(['blob', 'seal', 'outcome']);

function defaultNowUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

function isU32(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 0xffffffff;
}

export class TapeWriter {
  readonly path: string;
  readonly header: TapeHeader;
  /** The tape's format version: new tapes get WriterOptions.formatVersion, continued ones keep theirs. */
  readonly version: FormatVersion;
  /** Its frames' head length: 84 bytes to version 2, 32 from version 3. */
  private readonly headBytes: number;
  /** Set when reopening dropped an incomplete last frame. */
  readonly recoveredTornTail: TornTail | null;

  private readonly fh: FileHandle;
  private readonly policy: FsyncPolicy;
  private readonly limits: TapeLimits;
  private readonly nowUs: () => number;
  private readonly compress: boolean;
  private readonly blobHashes: Set<string>;
  private chainBytes: Uint8Array;
  private offset: number;
  private frames: number;
  private maxStep: number;
  private isSealed = false;
  private closed = false;
  /** close() finished with every frame written: state() may hand the tape on. */
  private closedClean = false;
  private failure: unknown;
  private queue: Promise<void> = Promise.resolve();
  private openBatch: PendingBatch | undefined;
  /** Frames appended since hold(), waiting for release() to go out in one write. */
  private held: { chunks: Uint8Array[]; sync: boolean } | undefined;
  /** Queued operations not finished yet; none means a write may go straight to the file. */
  private inflight = 0;

  private constructor(init: {
    path: string;
    header: TapeHeader;
    version: FormatVersion;
    fh: FileHandle;
    options: WriterOptions;
    chain: Uint8Array;
    offset: number;
    frames: number;
    blobs: Iterable<string>;
    maxStep: number;
    torn: TornTail | null;
  }) {
    this.path = init.path;
    this.header = init.header;
    this.version = init.version;
    this.headBytes = frameHeadBytes(init.version);
    this.compress = init.version >= 2 && (init.options.compress ?? true);
    this.fh = init.fh;
    this.policy = init.options.fsync ?? 'step';
    this.limits = resolveLimits(init.options.limits);
    this.nowUs = init.options.nowUs ?? defaultNowUs;
    this.chainBytes = init.chain;
    this.offset = init.offset;
    this.frames = init.frames;
    this.blobHashes = new Set(init.blobs);
    this.maxStep = init.maxStep;
    this.recoveredTornTail = init.torn;
  }

  /**
   * Creates the tape, or continues it when `path` already holds an unsealed tape with the same `tapeId` (a
   * retried activity reopening its own tape).
   */
  static async open(path: string, header: TapeHeader, options: WriterOptions = {}): Promise<TapeWriter> {
    const bad = headerProblem(header);
    if (bad) throw new TapeUsageError(`cannot create tape ${path}: ${bad}`);
    let created: TapeWriter | undefined;
    try {
      created = await TapeWriter.create(path, header, options);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (created) return created;
    const w = await TapeWriter.reopen(path, options);
    if (w.header.tapeId !== header.tapeId) {
      await w.close();
      throw new TapeUsageError(
        `tape ${path} already exists with tapeId ${w.header.tapeId}, not ${header.tapeId}; choose another path`,
      );
    }
    return w;
  }

  private static async create(path: string, header: TapeHeader, options: WriterOptions): Promise<TapeWriter> {
    const version = options.formatVersion ?? FORMAT_VERSION;
    const { bytes, checksum } = encodeHeader(header, version);
    const limits = resolveLimits(options.limits);
    if (bytes.byteLength - 48 > limits.maxHeaderBytes) {
      throw new TapeLimitError(
        'maxHeaderBytes',
        `header of ${bytes.byteLength - 48} bytes exceeds maxHeaderBytes`,
        {
          file: path,
          frameIndex: null,
          offset: 16,
          recoverableFrames: 0,
        },
      );
    }
    // The header lands atomically (complete temp file, then link(), which fails with EEXIST if the tape
    // exists), so no reader or crash ever leaves a torn header at `path`, and an existing tape is never replaced.
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    const t = await openFile(tmp, 'wx');
    try {
      await t.writeFile(bytes);
      await t.sync();
    } finally {
      await t.close();
    }
    try {
      await link(tmp, path);
    } finally {
      await unlink(tmp);
    }
    await syncDir(dirname(path));
    const fh = await openFile(path, 'a');
    return new TapeWriter({
      path,
      header,
      version,
      fh,
      options,
      chain: checksum,
      offset: bytes.byteLength,
      frames: 0,
      blobs: [],
      maxStep: -1,
      torn: null,
    });
  }

  /**
   * Continues an existing unsealed tape: verifies every frame (throwing on corruption, never repairing it),
   * truncates a torn tail, and resumes the chain from the last verified frame.
   */
  static async reopen(path: string, options: WriterOptions = {}): Promise<TapeWriter> {
    const cursor = openTape(path, { limits: options.limits, keepBlobs: false });
    try {
      while (cursor.next()) {}
    } finally {
      cursor.close();
    }
    if (cursor.sealed) {
      throw new TapeSealedError(
        'the tape is sealed and cannot be appended to; fork it into a new tape instead',
        {
          file: path,
          frameIndex: cursor.frameCount - 1,
          offset: cursor.seal?.byteLength ?? cursor.offset,
          recoverableFrames: cursor.frameCount,
        },
      );
    }
    if (cursor.tornTail) {
      await truncate(path, cursor.tornTail.offset);
    }
    const fh = await openFile(path, 'a');
    if (cursor.tornTail) await fh.sync();
    return new TapeWriter({
      path,
      header: cursor.header,
      version: cursor.version,
      fh,
      options,
      chain: cursor.chainBytes,
      offset: cursor.offset,
      frames: cursor.frameCount,
      blobs: cursor.blobs.keys(),
      maxStep: cursor.maxStep,
      torn: cursor.tornTail,
    });
  }

  /**
   * Continues a tape from the state its last writer left when it closed (state()), without reading the tape:
   * O(1) where reopen is O(tape). A file of any other length than that state's (another process appended, or
   * cut a torn tail) is reopened and verified instead.
   */
  static async resume(
    path: string,
    state: TapeWriterState,
    options: WriterOptions = {},
  ): Promise<TapeWriter> {
    const fh = await openFile(path, 'a');
    let size: number;
    try {
      // Synchronous: one syscall of microseconds on a descriptor just opened.
      size = fstatSync(fh.fd).size;
    } catch (err) {
      await fh.close();
      throw err;
    }
    if (size !== state.offset) {
      await fh.close();
      return TapeWriter.reopen(path, options);
    }
    return new TapeWriter({
      path,
      header: state.header,
      version: state.version,
      fh,
      options,
      chain: state.chain,
      offset: state.offset,
      frames: state.frames,
      blobs: state.blobs,
      maxStep: state.maxStep,
      torn: null,
    });
  }

  /**
   * The state to resume this tape from: only once the writer closed with every frame written, and not for a
   * sealed tape, which takes no more frames.
   */
  state(): TapeWriterState | undefined {
    if (!this.closedClean || this.isSealed) return undefined;
    return {
      header: this.header,
      version: this.version,
      chain: this.chainBytes,
      offset: this.offset,
      frames: this.frames,
      maxStep: this.maxStep,
      blobs: this.blobHashes,
    };
  }

  get frameCount(): number {
    return this.frames;
  }
  /** The highest step index of any frame so far; -1 before the first. */
  get lastStep(): number {
    return this.maxStep;
  }
  get blobCount(): number {
    return this.blobHashes.size;
  }
  get byteLength(): number {
    return this.offset;
  }
  get chain(): string {
    return toHex(this.chainBytes);
  }
  get sealed(): boolean {
    return this.isSealed;
  }
  hasBlob(hash: string): boolean {
    return this.blobHashes.has(hash);
  }

  private usable(what: string): void {
    if (this.failure !== undefined) {
      throw new TapeWriterUnavailableError(
        `tape ${this.path}: cannot ${what}: an earlier write failed`,
        this.failure,
      );
    }
    if (this.closed)
      throw new TapeWriterUnavailableError(`tape ${this.path}: cannot ${what}: the writer is closed`);
    if (this.isSealed) throw new TapeUsageError(`tape ${this.path}: cannot ${what}: the tape is sealed`);
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    this.inflight++;
    const run = this.queue.then(() => {
      if (this.failure !== undefined)
        throw new TapeWriterUnavailableError(`tape ${this.path}: an earlier write failed`, this.failure);
      return op();
    });
    this.queue = run.catch((err) => {
      this.failure ??= err;
    });
    void this.queue.then(() => {
      this.inflight--;
    });
    return run;
  }

  /**
   * Frames appended while an earlier write is in flight share one write (and at most one fsync): one
   * syscall per streamed chunk would cost more than hashing it. Order is kept because batches queue in order.
   */
  private batched(bytes: Uint8Array, sync: boolean): Promise<void> {
    let batch = this.openBatch;
    if (!batch) {
      const b: PendingBatch = { chunks: [], sync: false, done: Promise.resolve() };
      b.done = this.enqueue(async () => {
        // From here on, new frames go to the next batch.
        if (this.openBatch === b) this.openBatch = undefined;
        await writeAll(this.fh, b.chunks.length === 1 ? b.chunks[0]! : Buffer.concat(b.chunks));
        // fdatasync: the frames and the grown length reach the disk; only timestamps may lag, which no reader uses.
        if (b.sync) await this.fh.datasync();
      });
      this.openBatch = batch = b;
    }
    batch.chunks.push(bytes);
    batch.sync ||= sync;
    return batch.done;
  }

  private checkStep(step: number): void {
    if (!isU32(step)) throw new TapeUsageError(`tape ${this.path}: step must be a u32, got ${String(step)}`);
  }

  /** Encodes, chains and queues one frame; returns once it is written (and fsynced if the policy says so). */
  private write(
    kind: FrameKind,
    step: number,
    encoding: number,
    payload: Uint8Array,
    at?: number,
  ): Promise<AppendedFrame> {
    const recordedAtUs = at ?? this.nowUs();
    if (!Number.isSafeInteger(recordedAtUs) || recordedAtUs < 0) {
      throw new TapeUsageError(`tape ${this.path}: recordedAtUs must be a non-negative integer`);
    }
    const length = this.headBytes + payload.byteLength;
    if (length > this.limits.maxFrameBytes) {
      throw new TapeLimitError(
        'maxFrameBytes',
        `a ${kind} frame of ${length} bytes exceeds maxFrameBytes ${this.limits.maxFrameBytes}; nothing was written`,
        {
          file: this.path,
          frameIndex: this.frames,
          offset: this.offset,
          recoverableFrames: this.frames,
        },
      );
    }
    const enc = encodeFrame(
      this.chainBytes,
      { kind: kindCode(kind), encoding, step, recordedAtUs },
      payload,
      this.version,
    );
    const info = new AppendedFrameInfo(this.frames, this.offset, length, enc.payloadHash, enc.chain);
    this.chainBytes = enc.chain;
    this.offset += length;
    this.frames++;
    if (step > this.maxStep) this.maxStep = step;
    const sync = this.policy === 'every-frame' || (this.policy === 'step' && STEP_CLOSING_KINDS.has(kind));
    if (this.held) {
      this.held.chunks.push(enc.bytes);
      this.held.sync ||= sync;
      return Promise.resolve(info);
    }
    // A small frame with no fsync due and nothing queued ahead goes to the file at once: a page-cache write of
    // a few hundred bytes takes a microsecond or two, its round trip through the thread pool a hundred. It is
    // as durable either way (on the file, not yet on the disk) and reaches the file sooner, so a SIGKILL right
    // after the append keeps it. Frames that need an fsync, and big ones, keep the asynchronous path.
    if (!sync && length <= SYNC_WRITE_MAX_BYTES && this.inflight === 0 && this.failure === undefined) {
      try {
        writeAllNow(this.fh.fd, enc.bytes);
        return Promise.resolve(info);
      } catch (err) {
        this.failure = err;
        return Promise.reject(new TapeWriterUnavailableError(`tape ${this.path}: a write failed`, err));
      }
    }
    return this.batched(enc.bytes, sync).then(() => info);
  }

  /**
   * Holds the frames appended from now on in memory, their appends resolving at once, until release() writes
   * them in one write (one syscall for a step's dozen frames and blobs instead of one round trip each).
   * Nothing held is on the file, let alone durable, before release() resolves; a caller that gives up
   * instead must drop the writer (it is ahead of the file).
   */
  hold(): void {
    this.usable('hold frames');
    this.held ??= { chunks: [], sync: false };
  }

  /** Writes what hold() kept, in order with everything queued before; rejects if that write fails. */
  release(): Promise<void> {
    const h = this.held;
    this.held = undefined;
    if (!h || h.chunks.length === 0) return Promise.resolve();
    const bytes = h.chunks.length === 1 ? h.chunks[0]! : Buffer.concat(h.chunks);
    // With nothing queued ahead, the write goes to the file at once: a page-cache write of a step's few
    // kilobytes takes microseconds, and as a promise it waited its turn in the thread pool, a millisecond or
    // more on a busy machine. fsyncs stay asynchronous: those take milliseconds.
    if (this.inflight === 0 && this.failure === undefined && !h.sync) {
      try {
        writeAllNow(this.fh.fd, bytes);
        return Promise.resolve();
      } catch (err) {
        this.failure = err;
        return Promise.reject(new TapeWriterUnavailableError(`tape ${this.path}: a write failed`, err));
      }
    }
    return this.batched(bytes, h.sync);
  }

  /** Queues held frames ahead of an operation that must come after them (sync, seal, close). */
  private releaseHeld(): void {
    // Its failure poisons the writer, and the operation that follows reports it.
    if (this.held) void this.release().catch(() => {});
  }

  /**
   * The bytes are the encoder's shared buffer (encodePayloadShared): every caller hands them to write(), which
   * copies them into the frame, before anything else is encoded, with no await in between.
   */
  private encode(kind: FrameKind, payload: unknown): Uint8Array {
    try {
      return encodePayloadShared(payload);
    } catch (err) {
      throw new TapeUsageError(
        `tape ${this.path}: ${kind} payload is not MessagePack-encodable: ${(err as Error).message}`,
        err,
      );
    }
  }

  private encodeChecked(kind: FrameKind, payload: unknown): Uint8Array {
    const bytes = this.encode(kind, payload);
    // The writer applies the reader's own checks, so it can never produce a tape its reader rejects.
    const refs: string[] = [];
    const problem = scanPayload(bytes, this.limits, refs);
    if (problem) {
      throw new TapeUsageError(
        `tape ${this.path}: ${kind} payload would not read back: ${problem.detail} (Dates, Maps with non-string keys and bigints are not allowed)`,
      );
    }
    for (const r of refs) {
      if (!this.blobHashes.has(r)) {
        throw new TapeUsageError(
          `tape ${this.path}: ${kind} payload references blob ${r}, which this tape does not store; putBlob it first`,
        );
      }
    }
    return bytes;
  }

  async append(frame: AppendFrame): Promise<AppendedFrame> {
    this.usable('append');
    if (!FRAME_KINDS.includes(frame.kind))
      throw new TapeUsageError(`tape ${this.path}: unknown frame kind ${String(frame.kind)}`);
    if (WRITER_ONLY_KINDS.has(frame.kind)) {
      throw new TapeUsageError(
        `tape ${this.path}: ${frame.kind} frames are written by ${frame.kind === 'blob' ? 'putBlob()' : 'seal()'}, not append()`,
      );
    }
    this.checkStep(frame.step);
    const encoding = frame.encoding ?? 'msgpack';
    let bytes: Uint8Array;
    if (encoding === 'raw') {
      if (!(frame.payload instanceof Uint8Array))
        throw new TapeUsageError(`tape ${this.path}: a raw payload must be a Uint8Array`);
      bytes = frame.payload;
    } else {
      const bad = payloadProblem(frame.kind, frame.payload);
      if (bad) throw new TapeUsageError(`tape ${this.path}: ${bad}`);
      bytes = this.encodeChecked(frame.kind, frame.payload);
    }
    return this.write(frame.kind, frame.step, encodingCode(encoding), bytes, frame.recordedAtUs);
  }

  /** Stores bytes once, keyed by their BLAKE3; later calls with the same bytes write nothing. */
  async putBlob(bytes: Uint8Array, options: BlobOptions = {}): Promise<BlobRef> {
    this.usable('store a blob');
    const step = options.step ?? Math.max(this.maxStep, 0);
    this.checkStep(step);
    return this.storeBlob(bytes, blake3(bytes), step, options.encoding === 'msgpack');
  }

  private async storeBlob(bytes: Uint8Array, hash: Uint8Array, step: number, msgpack: boolean) {
    const hex = toHex(hash);
    if (this.blobHashes.has(hex)) return new BlobRef(hash);
    if (msgpack) {
      const refs: string[] = [];
      const problem = scanPayload(bytes, this.limits, refs);
      if (problem)
        throw new TapeUsageError(
          `tape ${this.path}: msgpack blob would not read back: ${problem.detail} (Dates, Maps with non-string keys and bigints are not allowed)`,
        );
      const dangling = refs.find((r) => !this.blobHashes.has(r));
      if (dangling)
        throw new TapeUsageError(
          `tape ${this.path}: blob references blob ${dangling}, which this tape does not store`,
        );
    }
    // A blob the reader could not inflate within its frame limit is not compressed (and fails the limit as it is).
    const packed =
      this.compress && this.headBytes + bytes.byteLength <= this.limits.maxFrameBytes
        ? compressBlob(bytes, hash)
        : undefined;
    const encoding = encodingCode(msgpack ? 'msgpack' : 'raw', packed !== undefined);
    // Registered before the write resolves so concurrent puts of the same bytes dedupe too.
    const pending = this.write('blob', step, encoding, packed ?? bytes);
    this.blobHashes.add(hex);
    await pending;
    return new BlobRef(hash);
  }

  /**
   * Encodes a value as canonical MessagePack and stores it as a blob. Hashed before it is checked: a value the
   * tape already holds (a resent conversation's messages, the same tool specs every step) was checked when it
   * was first stored, and a new one is scanned once, as putBlob scans msgpack bytes.
   */
  async putValue(value: unknown, options: Omit<BlobOptions, 'encoding'> = {}): Promise<BlobRef> {
    this.usable('store a blob');
    const step = options.step ?? Math.max(this.maxStep, 0);
    this.checkStep(step);
    const bytes = this.encode('blob', value);
    return this.storeBlob(bytes, blake3(bytes), step, true);
  }

  /** Resolves once every frame appended so far has reached the file, without an fsync. */
  async flushed(): Promise<void> {
    await this.queue;
    if (this.failure !== undefined)
      throw new TapeWriterUnavailableError(`tape ${this.path}: an earlier write failed`, this.failure);
  }

  /** Makes everything appended so far durable. */
  async sync(): Promise<void> {
    if (this.closed) return;
    this.releaseHeld();
    await this.enqueue(() => this.fh.datasync());
  }

  /** Writes the outcome frame and the seal, and fsyncs. The tape accepts nothing afterwards. */
  async seal(outcome: Record<string, unknown>, options: { step?: number } = {}): Promise<SealInfo> {
    this.usable('seal');
    const step = options.step ?? Math.max(this.maxStep, 0);
    this.checkStep(step);
    const bad = payloadProblem('outcome', outcome);
    if (bad) throw new TapeUsageError(`tape ${this.path}: ${bad}`);
    // The seal goes out after anything held, then one fsync covers all of it.
    this.releaseHeld();
    const outcomeWrite = this.write(
      'outcome',
      step,
      ENCODING_MSGPACK,
      this.encodeChecked('outcome', outcome),
    );
    const info: SealInfo = {
      finalChain: toHex(this.chainBytes),
      frameCount: this.frames,
      blobCount: this.blobHashes.size,
      byteLength: this.offset,
    };
    const sealBytes = encodeSeal({ ...info, finalChain: this.chainBytes });
    const sealWrite = this.write('seal', step, ENCODING_RAW, sealBytes);
    this.isSealed = true;
    await outcomeWrite;
    await sealWrite;
    await this.enqueue(() => this.fh.datasync());
    return info;
  }

  /** Waits for queued writes, fsyncs unless the policy is 'none', closes the file. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.releaseHeld();
    this.closed = true;
    try {
      await this.queue;
      if (this.failure === undefined && this.policy !== 'none') await this.fh.datasync();
    } finally {
      await this.fh.close();
    }
    if (this.failure !== undefined)
      throw new TapeWriterUnavailableError(`tape ${this.path}: a write failed before close`, this.failure);
    this.closedClean = true;
  }
}

interface PendingBatch {
  chunks: Uint8Array[];
  sync: boolean;
  done: Promise<void>;
}

async function writeAll(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.byteLength) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.byteLength - done);
    done += bytesWritten;
  }
}

/** Frames up to this size are written synchronously when nothing is queued (see write()). */
const SYNC_WRITE_MAX_BYTES = 64 * 1024;

function writeAllNow(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
}

async function syncDir(dir: string): Promise<void> {
  const d = await openFile(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
