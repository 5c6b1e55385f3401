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
  const view = new DataView(bytes.buffer);
  view.setUint32(0, bytes.byteLength, true);
  view.setUint8(4, fields.kind);
  view.setUint8(5, fields.encoding);
  view.setUint16(6, 0, true);
  view.setUint32(8, fields.step, true);
  view.setBigUint64(12, BigInt(fields.recordedAtUs), true);
  const payloadHash = blake3(payload);
  bytes.set(payloadHash, 20);
  const chain = chainNext(previousChain, bytes.subarray(0, CHAINED_BYTES));
  bytes.set(chain, CHAINED_BYTES);
  bytes.set(payload, FRAME_HEAD_BYTES);
  return { bytes, payloadHash, chain };
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
