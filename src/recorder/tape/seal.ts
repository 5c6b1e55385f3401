/**
 * The seal payload: a fixed 48-byte record, so a sealed tape always ends in a frame of fixed size (80 bytes from
 * format version 3, 132 before) that a reader can find by seeking to the end, and whose counts let it check
 * that nothing was dropped before the seal.
 */
import { HASH_BYTES } from './hash';

export const SEAL_PAYLOAD_BYTES = 48;

export interface SealRecord {
  /** Chain value of the last frame before the seal (the header checksum if there is none). */
  finalChain: Uint8Array;
  /** Frames before the seal, blob and outcome frames included. */
  frameCount: number;
  blobCount: number;
  /** Offset of the seal frame, i.e. the file's length before the seal was written. */
  byteLength: number;
}

export function encodeSeal(s: SealRecord): Uint8Array {
  const bytes = new Uint8Array(SEAL_PAYLOAD_BYTES);
  const view = new DataView(bytes.buffer);
  bytes.set(s.finalChain, 0);
  view.setUint32(32, s.frameCount, true);
  view.setUint32(36, s.blobCount, true);
  view.setBigUint64(40, BigInt(s.byteLength), true);
  return bytes;
}

export function decodeSeal(bytes: Uint8Array): SealRecord | undefined {
  if (bytes.byteLength !== SEAL_PAYLOAD_BYTES) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    finalChain: bytes.slice(0, HASH_BYTES),
    frameCount: view.getUint32(32, true),
    blobCount: view.getUint32(36, true),
    byteLength: Number(view.getBigUint64(40, true)),
  };
}
