/**
 * The 84-byte fixed frame head and its chain link. The chain hash sits before the payload so a reader can
 * authenticate a frame's length field before trusting it: that is what separates a torn tail (a verified head
 * whose payload never reached the disk) from a corrupt length.
 */
import { blake3, chainNext } from './hash';

export const FRAME_HEAD_BYTES = 84;
/** Bytes 0..52 (everything before the chain hash) feed the chain. */
export const CHAINED_BYTES = 52;
/** Where the payload's BLAKE3 sits in the head. */
export const PAYLOAD_HASH_AT = 20;

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
): EncodedFrame {
  const bytes = new Uint8Array(FRAME_HEAD_BYTES + payload.byteLength);
  // Byte by byte rather than through a DataView and a BigInt: this runs for every frame a worker writes.
  putU32(bytes, 0, bytes.byteLength);
  bytes[4] = fields.kind;
  bytes[5] = fields.encoding;
  putU32(bytes, 8, fields.step);
  // recordedAtUs is a safe integer (the writer checks): its low and high 32 bits.
  putU32(bytes, 12, fields.recordedAtUs >>> 0);
  putU32(bytes, 16, Math.floor(fields.recordedAtUs / 0x1_0000_0000));
  const payloadHash = blake3(payload);
  bytes.set(payloadHash, PAYLOAD_HASH_AT);
  const chain = chainNext(previousChain, bytes.subarray(0, CHAINED_BYTES));
  bytes.set(chain, CHAINED_BYTES);
  bytes.set(payload, FRAME_HEAD_BYTES);
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

const u32 = (b: Uint8Array, at: number) =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * The head's integer fields (`head` at least FRAME_HEAD_BYTES long), read without a copy or a DataView: the
 * reader's per-frame path. The two hashes are compared where they lie. Validation is the reader's job.
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
