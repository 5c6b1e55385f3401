/**
 * Frame-by-frame verifying reader. Each `next()` authenticates one frame (chain, payload hash, structure,
 * limits) before returning it, so a consumer can stream a tape of any length in bounded memory, and so the
 * writer can reuse it to verify a tape before appending.
 */
import { inflateBlob } from './compressedBlob';
import { TapeCorruptError, TapeLimitError, type TapeLocation } from './errors';
import {
  CHAIN_CHECK_AT,
  CHAIN_CHECK_BYTES,
  CHAINED_BYTES,
  compactHeadIntact,
  FRAME_HEAD_BYTES,
  frameHeadBytes,
  HEAD_CHECK_AT,
  HEAD_FIELDS_BYTES,
  PAYLOAD_HASH_AT,
  readHeadFields,
  u32,
} from './frame';
import {
  blake3,
  bytesEqual,
  bytesEqualAt,
  chainNext,
  chainNextParts,
  HASH_BYTES,
  toHex,
  toHexAt,
} from './hash';
import { type FormatVersion, parseHeader, type TapeHeader } from './header';
import {
  ENCODING_MSGPACK,
  ENCODING_RAW,
  encodingName,
  type FrameKind,
  isCompressedEncoding,
  kindName,
  type PayloadEncoding,
} from './kinds';
import { resolveLimits, type TapeLimits } from './limits';
import { PayloadProblem, scanPayload } from './payload';
import { decodeCheckedPayload } from './payloadDecoder';
import { payloadProblem } from './schema';
import { decodeSeal, SEAL_PAYLOAD_BYTES } from './seal';
import { type ByteSource, openSource } from './source';

export interface TapeFrame {
  index: number;
  /** Byte offset of the frame's first byte. */
  offset: number;
  /** Whole frame length, fixed head included (84 bytes in a version-1 or -2 tape, 32 in a version-3 one). */
  length: number;
  /** The stored payload's length: `length` less the head (for a compressed blob, its deflated bytes). */
  payloadLength: number;
  /** `undefined` for a kind code this version does not define; the frame still verified. */
  kind: FrameKind | undefined;
  kindCode: number;
  step: number;
  /** Microseconds since the Unix epoch. */
  recordedAtUs: number;
  /** What the payload is; for a compressed blob frame, what it is once inflated. */
  encoding: PayloadEncoding;
  /** A compressed blob frame (version 2 and later): its stored payload is the key and a DEFLATE stream. */
  compressed: boolean;
  /** BLAKE3-256 of the stored payload bytes, hex. */
  payloadHash: string;
  /** For a blob frame, the blob's key (its bytes' BLAKE3, hex: the payload hash unless compressed). */
  blobKey: string | undefined;
  /** Chain value after this frame, hex. */
  chain: string;
  /**
   * Decoded MessagePack value, or the raw bytes. Blob frames always give the blob's bytes, inflated if they
   * were stored compressed (decode them with `decodeBlob`); a seal frame gives its SealInfo.
   */
  payload: unknown;
  /** Blob hashes referenced by the payload, in order. */
  refs: string[];
}

export interface TapeBlob {
  hash: string;
  encoding: PayloadEncoding;
  /** Present unless the cursor was opened with `keepBlobs: false`. */
  bytes: Uint8Array;
  frameIndex: number;
}

export interface SealInfo {
  finalChain: string;
  frameCount: number;
  blobCount: number;
  byteLength: number;
}

export interface TornTail {
  /** Where the incomplete frame starts: the length a recovering writer truncates the file to. */
  offset: number;
  bytesDropped: number;
}

export interface CursorOptions {
  limits?: Partial<TapeLimits>;
  /** Keep blob bytes in `blobs` (default true). With false only their hashes are kept, for streaming. */
  keepBlobs?: boolean;
  /** Name used in messages when `input` is bytes. */
  name?: string;
}

/**
 * A frame as the cursor returns it. Its two hashes are made hex only when asked for (after verification they
 * equal what the cursor computed), as most consumers never look at them, while hex-encoding both cost more
 * than a frame's BLAKE3.
 */
class VerifiedFrame implements TapeFrame {
  #payloadHashBytes: Uint8Array;
  #chainBytes: Uint8Array;
  #payloadHash: string | undefined;
  #chain: string | undefined;
  /** A compressed blob's key, which its payload carries (an uncompressed blob's is its payload hash). */
  #storedKey: string | undefined;

  constructor(
    readonly index: number,
    readonly offset: number,
    readonly length: number,
    readonly payloadLength: number,
    readonly kind: FrameKind | undefined,
    readonly kindCode: number,
    readonly step: number,
    readonly recordedAtUs: number,
    readonly encoding: PayloadEncoding,
    readonly payload: unknown,
    readonly refs: string[],
    payloadHash: Uint8Array,
    chain: Uint8Array,
    storedKey: string | undefined,
  ) {
    this.#payloadHashBytes = payloadHash;
    this.#chainBytes = chain;
    this.#storedKey = storedKey;
  }

  get compressed(): boolean {
    return this.#storedKey !== undefined;
  }

  get blobKey(): string | undefined {
    return this.kind === 'blob' ? (this.#storedKey ?? this.payloadHash) : undefined;
  }

  get payloadHash(): string {
    this.#payloadHash ??= toHex(this.#payloadHashBytes);
    return this.#payloadHash;
  }

  get chain(): string {
    this.#chain ??= toHex(this.#chainBytes);
    return this.#chain;
  }

  /** Both hashes as fields, as the plain object this frame stands for. */
  toJSON(): TapeFrame {
    return {
      index: this.index,
      offset: this.offset,
      length: this.length,
      payloadLength: this.payloadLength,
      kind: this.kind,
      kindCode: this.kindCode,
      step: this.step,
      recordedAtUs: this.recordedAtUs,
      encoding: this.encoding,
      compressed: this.compressed,
      payloadHash: this.payloadHash,
      blobKey: this.blobKey,
      chain: this.chain,
      payload: this.payload,
      refs: this.refs,
    };
  }
}

export class TapeCursor {
  readonly header: TapeHeader;
  /**
   * The tape's format version (FORMAT.md): 1; 2, where blobs may be stored compressed; 3, which adds the 32-byte
   * frame head.
   */
  readonly version: FormatVersion;
  /** The length of each frame's head in this tape: 84 bytes, or 32 from version 3. */
  readonly headBytes: number;
  /** BLAKE3 of the header; the chain's seed, hex. */
  readonly headerChecksum: string;
  readonly file: string;
  readonly limits: TapeLimits;
  readonly blobs = new Map<string, TapeBlob>();
  /** Offset just past the last verified frame (or the header). */
  offset: number;
  /** Frames verified so far. */
  frameCount = 0;
  sealed = false;
  seal: SealInfo | undefined;
  /** Payload of the last outcome frame, if any. */
  outcome: unknown;
  tornTail: TornTail | null = null;
  /** Highest step seen, -1 before any frame. */
  maxStep = -1;
  done = false;
  chainBytes: Uint8Array;

  private readonly source: ByteSource;
  private readonly keepBlobs: boolean;

  constructor(source: ByteSource, options: CursorOptions = {}) {
    this.source = source;
    this.file = source.name;
    this.limits = resolveLimits(options.limits);
    this.keepBlobs = options.keepBlobs ?? true;
    const parsed = parseHeader((o, l) => source.read(o, l), source.name, this.limits);
    this.header = parsed.header;
    this.version = parsed.version;
    this.headBytes = frameHeadBytes(parsed.version);
    this.headerChecksum = toHex(parsed.checksum);
    this.chainBytes = parsed.checksum;
    this.offset = parsed.end;
  }

  get chain(): string {
    return toHex(this.chainBytes);
  }

  close(): void {
    this.source.close();
  }

  private loc(offset = this.offset): TapeLocation {
    return { file: this.file, frameIndex: this.frameCount, offset, recoverableFrames: this.frameCount };
  }

  private corrupt(reason: string, detail: string, offset?: number, cause?: unknown): TapeCorruptError {
    return new TapeCorruptError(reason, detail, this.loc(offset), cause);
  }

  private zeroFrom(offset: number): boolean {
    for (let o = offset; o < this.source.size; o += 65536) {
      const chunk = this.source.read(o, 65536);
      for (const b of chunk) if (b !== 0) return false;
    }
    return true;
  }

  private tear(): undefined {
    this.tornTail = { offset: this.offset, bytesDropped: this.source.size - this.offset };
    this.done = true;
    return undefined;
  }

  /** The next verified frame, or `undefined` at the end (check `tornTail`). Throws typed tape errors. */
  next(): TapeFrame | undefined {
    if (this.done) return undefined;
    const start = this.offset;
    const left = this.source.size - start;
    if (this.sealed) {
      this.done = true;
      if (left > 0) throw this.corrupt('after-seal', `${left} bytes follow the seal frame`);
      return undefined;
    }
    if (left === 0) {
      this.done = true;
      return undefined;
    }
    // A crash can leave a partial frame, or a zero-filled extent where the filesystem grew the file first.
    const headLength = this.headBytes;
    if (left < headLength) return this.tear();
    // The head's fields are read where they lie in the source's window: no per-frame copies of its hashes.
    const headBytes = this.source.read(start, headLength);
    const head = readHeadFields(headBytes);
    if (head.length === 0 && this.zeroFrom(start)) return this.tear();
    // The length is authenticated before it is trusted: by the chain in an 84-byte head (which stores the
    // payload's hash), by the head's CRC-32 in a 32-byte one; the payload's part of the chain is checked below.
    let chain: Uint8Array | undefined;
    if (headLength === FRAME_HEAD_BYTES) {
      chain = chainNext(this.chainBytes, headBytes.subarray(0, CHAINED_BYTES));
      if (!bytesEqualAt(chain, 0, headBytes, CHAINED_BYTES, HASH_BYTES)) {
        throw this.corrupt(
          'chain',
          `chain hash mismatch (stored ${toHexAt(headBytes, CHAINED_BYTES, HASH_BYTES)}, expected ${toHex(chain)}): this frame's head was edited, or frames were removed or reordered before it`,
        );
      }
    } else if (!compactHeadIntact(headBytes)) {
      throw this.corrupt(
        'head-check',
        `frame head check mismatch (stored CRC-32 ${u32(headBytes, HEAD_CHECK_AT).toString(16).padStart(8, '0')} does not match bytes 0..${HEAD_FIELDS_BYTES} of the head): this frame's head was edited or overwritten`,
      );
    }
    if (head.length < headLength) {
      throw this.corrupt('frame-length', `frame length ${head.length} is below the ${headLength}-byte head`);
    }
    if (head.length > this.limits.maxFrameBytes) {
      throw new TapeLimitError(
        'maxFrameBytes',
        `frame of ${head.length} bytes exceeds maxFrameBytes ${this.limits.maxFrameBytes}`,
        this.loc(),
      );
    }
    if (head.length > left) return this.tear();
    if (head.reserved !== 0)
      throw this.corrupt('reserved', `reserved frame field is ${head.reserved}, must be 0`, start + 6);
    if (head.kind === 0) throw this.corrupt('kind', 'frame kind 0 is invalid', start + 4);
    const encoding = encodingName(head.encoding);
    if (encoding === undefined)
      throw this.corrupt('encoding', `unknown payload encoding ${head.encoding}`, start + 5);
    const payload = this.source.read(start + headLength, head.length - headLength);
    const payloadHash = blake3(payload);
    if (chain !== undefined) {
      if (!bytesEqualAt(payloadHash, 0, headBytes, PAYLOAD_HASH_AT, HASH_BYTES)) {
        throw this.corrupt(
          'payload-hash',
          `payload hash mismatch (stored ${toHexAt(headBytes, PAYLOAD_HASH_AT, HASH_BYTES)}, computed ${toHex(payloadHash)})`,
        );
      }
      // The stored chain equals the computed one: keep the window's bytes, not another copy.
      chain = headBytes.subarray(CHAINED_BYTES, CHAINED_BYTES + HASH_BYTES);
    } else {
      chain = chainNextParts(this.chainBytes, headBytes.subarray(0, HEAD_FIELDS_BYTES), payloadHash);
      if (!bytesEqualAt(chain, 0, headBytes, CHAIN_CHECK_AT, CHAIN_CHECK_BYTES)) {
        throw this.corrupt(
          'chain',
          `chain check mismatch (stored ${toHexAt(headBytes, CHAIN_CHECK_AT, CHAIN_CHECK_BYTES)}, expected ${toHex(chain.subarray(0, CHAIN_CHECK_BYTES))}): this frame's payload was edited, or frames were removed or reordered before it`,
        );
      }
    }
    const kind = kindName(head.kind);
    const refs: string[] = [];
    let value: unknown = payload;
    let blob = payload;
    let key: string | undefined;
    const compressed = isCompressedEncoding(head.encoding);
    if (compressed) {
      if (this.version < 2 || kind !== 'blob') {
        throw this.corrupt(
          'encoding',
          `payload encoding ${head.encoding} (a compressed blob) is only valid for blob frames of a version-2 or later tape`,
          start + 5,
        );
      }
      const inflated = inflateBlob(payload, this.limits.maxFrameBytes - headLength);
      if (!inflated.ok) {
        if (inflated.reason === 'limit')
          throw new TapeLimitError('maxFrameBytes', inflated.detail, this.loc());
        throw this.corrupt(inflated.reason, inflated.detail);
      }
      blob = inflated.bytes;
      value = blob;
      key = inflated.key;
    }
    if (encoding === 'msgpack') {
      // A blob is only checked here (its consumer decodes it when it needs it); any other payload is checked
      // and decoded in one pass.
      const decoded =
        kind === 'blob'
          ? scanPayload(blob, this.limits, refs)
          : decodeCheckedPayload(payload, this.limits, refs);
      if (decoded instanceof PayloadProblem) {
        if (decoded.limit) throw new TapeLimitError(decoded.limit, decoded.detail, this.loc());
        throw this.corrupt(decoded.reason, decoded.detail);
      }
      if (kind !== 'blob') value = decoded;
    }
    for (const r of refs) {
      if (!this.blobs.has(r))
        throw this.corrupt('dangling-ref', `payload references blob ${r}, which no earlier frame stores`);
    }
    if (kind === 'seal') {
      const seal = head.encoding === ENCODING_RAW ? decodeSeal(payload) : undefined;
      if (!seal) throw this.corrupt('seal', `seal payload must be ${SEAL_PAYLOAD_BYTES} raw bytes`);
      const mismatch = !bytesEqual(seal.finalChain, this.chainBytes)
        ? 'final chain'
        : seal.frameCount !== this.frameCount
          ? 'frame count'
          : seal.blobCount !== this.blobs.size
            ? 'blob count'
            : seal.byteLength !== start
              ? 'byte length'
              : undefined;
      if (mismatch) throw this.corrupt('seal', `seal ${mismatch} does not match the frames before it`);
      value = {
        finalChain: toHex(seal.finalChain),
        frameCount: seal.frameCount,
        blobCount: seal.blobCount,
        byteLength: seal.byteLength,
      } satisfies SealInfo;
      this.seal = value as SealInfo;
      this.sealed = true;
    } else if (kind === 'blob') {
      const hashHex = key ?? toHex(payloadHash);
      if (this.blobs.has(hashHex))
        throw this.corrupt('duplicate-blob', `blob ${hashHex} is stored a second time`);
      this.blobs.set(hashHex, {
        hash: hashHex,
        encoding,
        bytes: this.keepBlobs ? blob : new Uint8Array(0),
        frameIndex: this.frameCount,
      });
    } else if (kind !== undefined && head.encoding === ENCODING_MSGPACK) {
      const bad = payloadProblem(kind, value);
      if (bad) throw this.corrupt('schema', bad);
      if (kind === 'outcome') this.outcome = value;
    }
    const frame = new VerifiedFrame(
      this.frameCount,
      start,
      head.length,
      head.length - headLength,
      kind,
      head.kind,
      head.step,
      head.recordedAtUs,
      encoding,
      value,
      refs,
      payloadHash,
      chain,
      key,
    );
    this.chainBytes = chain;
    this.offset = start + head.length;
    this.frameCount++;
    if (head.step > this.maxStep) this.maxStep = head.step;
    return frame;
  }
}

/** Opens a lazy, verifying cursor over a path or bytes. Close it when done with a file. */
export function openTape(input: string | Uint8Array, options: CursorOptions = {}): TapeCursor {
  const source = openSource(input, options.name);
  try {
    return new TapeCursor(source, options);
  } catch (err) {
    source.close();
    throw err;
  }
}
