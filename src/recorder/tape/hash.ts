/**
 * The two hashes of the format. BLAKE3-256 names content (payloads, blobs, the header); BLAKE2b links frames
 * into a chain. The chain uses BLAKE2b-512 truncated to its first 32 bytes — not BLAKE2b-256, which has a
 * different parameter block — because node:crypto only exposes the 512-bit variant and is ~20x faster than
 * a JS implementation.
 */
import * as crypto from 'node:crypto';
import { hash as blake3wasm } from 'blake3-wasm';

export const HASH_BYTES = 32;

/** `crypto.hash` (Node 20.12+): one call, no Hash object; a tape reader's chain step costs a third less with it. */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer })
  .hash;
const CHAIN_INPUT_BYTES = HASH_BYTES + 52;
const chainInput = new Uint8Array(CHAIN_INPUT_BYTES);

export function blake3(bytes: Uint8Array): Uint8Array {
  const out = blake3wasm(bytes) as Buffer;
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** chain_i = BLAKE2b-512(chain_{i-1} || frame bytes 0..52)[0..32). */
export function chainNext(previous: Uint8Array, frameFields: Uint8Array): Uint8Array {
  let d: Buffer;
  if (oneShot && previous.byteLength + frameFields.byteLength === CHAIN_INPUT_BYTES) {
    chainInput.set(previous, 0);
    chainInput.set(frameFields, previous.byteLength);
    d = oneShot('blake2b512', chainInput, 'buffer');
  } else {
    d = crypto.createHash('blake2b512').update(previous).update(frameFields).digest();
  }
  return new Uint8Array(d.buffer, d.byteOffset, HASH_BYTES);
}

/** Whether `a[aAt..aAt+length)` equals `b[bAt..bAt+length)`: compares hashes where they lie, copying nothing. */
export function bytesEqualAt(
  a: Uint8Array,
  aAt: number,
  b: Uint8Array,
  bAt: number,
  length: number,
): boolean {
  for (let i = 0; i < length; i++) if (a[aAt + i] !== b[bAt + i]) return false;
  return true;
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Hex of `length` bytes of `bytes` from `at`. */
export function toHexAt(bytes: Uint8Array, at: number, length: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString('hex');
}

export function fromHex(hex: string): Uint8Array {
  if (!/^[0-9a-f]*$/.test(hex) || hex.length % 2 !== 0)
    throw new TypeError(`not lowercase hex: ${hex.slice(0, 80)}`);
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
