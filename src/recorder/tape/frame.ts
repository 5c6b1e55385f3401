/**
 * Frame heads and their chain link, in the two layouts of the format (FORMAT.md, "Frames"). Versions 1 and 2
 * store an 84-byte head carrying the payload's BLAKE3 and the whole chain value; version 3 a 32-byte head that
 * carries neither, because a reader recomputes both anyway: it stores a CRC-32 of the head's fields, which
 * authenticates the length before the payload is read (what separates a torn tail from a corrupt length), and
 * the chain's first 8 bytes, which place a mismatch at its frame. The chain itself is the same function of the
 * same 52 bytes (the head's first 20 and the payload's BLAKE3) in every version.
 */
import { crc32 } from './crc32';
import { blake3, chainNextParts } from './hash';

/** The head of a version-1 or version-2 frame. */
export const FRAME_HEAD_BYTES = 84;
/** The head of a version-3 frame. */
export const COMPACT_HEAD_BYTES = 32;
/** Bytes 0..20 of every head: length, kind, encoding, reserved, step, recordedAtUs. */
export const HEAD_FIELDS_BYTES = 20;
/** Bytes 0..52 (everything before the chain hash) feed the chain, in the 84-byte head. */
export const CHAINED_BYTES = 52;
/** Where the payload's BLAKE3 sits in the 84-byte head. */
export const PAYLOAD_HASH_AT = 20;
/** Where the 32-byte head keeps its CRC-32 of bytes 0..20, and its 8 bytes of the chain. */
export const HEAD_CHECK_AT = 20;
export const CHAIN_CHECK_AT = 24;
export const CHAIN_CHECK_BYTES = 8;

/** The head length of a frame in a tape of this format version. */
export function frameHeadBytes(version: number): number {
  return version >= 3 ? COMPACT_HEAD_BYTES : FRAME_HEAD_BYTES;
}

export interface FrameFields {
  kind: number;
  encoding: number;
  step: number;
  recordedAtUs: number;
}

export interface EncodedFrame {
  bytes: Uint8Array;
  payloadHash: Uint8Array;
  chain: Uint8Array;
}

export function encodeFrame(
  previousChain: Uint8Array,
  fields: FrameFields,
  payload: Uint8Array,
  /** The tape's format version, which sets the head's layout. */
  version: number,
): EncodedFrame {
  const headBytes = frameHeadBytes(version);
  const bytes = new Uint8Array(headBytes + payload.byteLength);
  // Byte by byte rather than through a DataView and a BigInt: this runs for every frame a worker writes.
  putU32(bytes, 0, bytes.byteLength);
  bytes[4] = fields.kind;
  bytes[5] = fields.encoding;
  putU32(bytes, 8, fields.step);
  // recordedAtUs is a safe integer (the writer checks): its low and high 32 bits.
  putU32(bytes, 12, fields.recordedAtUs >>> 0);
  putU32(bytes, 16, Math.floor(fields.recordedAtUs / 0x1_0000_0000));
  const payloadHash = blake3(payload);
  const chain = chainNextParts(previousChain, bytes.subarray(0, HEAD_FIELDS_BYTES), payloadHash);
  if (headBytes === FRAME_HEAD_BYTES) {
    bytes.set(payloadHash, PAYLOAD_HASH_AT);
    bytes.set(chain, CHAINED_BYTES);
  } else {
    putU32(bytes, HEAD_CHECK_AT, crc32(bytes, 0, HEAD_FIELDS_BYTES));
    bytes.set(chain.subarray(0, CHAIN_CHECK_BYTES), CHAIN_CHECK_AT);
  }
  bytes.set(payload, headBytes);
  return { bytes, payloadHash, chain };
}

function putU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

export interface FrameHead extends FrameFields {
  length: number;
  reserved: number;
}

export const u32 = (b: Uint8Array, at: number) =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * The head's integer fields (`head` at least HEAD_FIELDS_BYTES long), read without a copy or a DataView: the
 * reader's per-frame path. The hashes are compared where they lie. Validation is the reader's job.
 */
export function readHeadFields(head: Uint8Array): FrameHead {
  return {
    length: u32(head, 0),
    kind: head[4]!,
    encoding: head[5]!,
    reserved: head[6]! | (head[7]! << 8),
    step: u32(head, 8),
    // Above 2^53 µs (year 2255) precision is lost, rounded once as Number(BigInt) rounds; a reader reports, it
    // does not reject, such a stamp.
    recordedAtUs: u32(head, 16) * 0x1_0000_0000 + u32(head, 12),
  };
}

/** Whether a 32-byte head's stored CRC-32 matches its first 20 bytes. */
export function compactHeadIntact(head: Uint8Array): boolean {
  return u32(head, HEAD_CHECK_AT) === crc32(head, 0, HEAD_FIELDS_BYTES);
}
