/**
 * The 84-byte fixed frame head and its chain link. The chain hash sits before the payload so a reader can
 * authenticate a frame's length field before trusting it: that is what separates a torn tail (a verified head
 * whose payload never reached the disk) from a corrupt length.
 */
import { blake3, chainNext, HASH_BYTES } from './hash';

export const FRAME_HEAD_BYTES = 84;
/** Bytes 0..52 (everything before the chain hash) feed the chain. */
export const CHAINED_BYTES = 52;

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
  payloadHash: Uint8Array;
  chain: Uint8Array;
}

/** Pure field extraction from `head` (at least FRAME_HEAD_BYTES long); validation is the reader's job. */
export function parseFrameHead(head: Uint8Array): FrameHead {
  const view = new DataView(head.buffer, head.byteOffset, FRAME_HEAD_BYTES);
  const recorded = view.getBigUint64(12, true);
  return {
    length: view.getUint32(0, true),
    kind: view.getUint8(4),
    encoding: view.getUint8(5),
    reserved: view.getUint16(6, true),
    step: view.getUint32(8, true),
    // Above 2^53 µs (year 2255) precision is lost; a reader reports, it does not reject, such a stamp.
    recordedAtUs: Number(recorded),
    payloadHash: head.slice(20, 20 + HASH_BYTES),
    chain: head.slice(CHAINED_BYTES, CHAINED_BYTES + HASH_BYTES),
  };
}
