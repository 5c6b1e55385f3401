/**
 * The two hashes of the format. BLAKE3-256 names content (payloads, blobs, the header); BLAKE2b links frames
 * into a chain. The chain uses BLAKE2b-512 truncated to its first 32 bytes — not BLAKE2b-256, which has a
 * different parameter block — the variant node:crypto exposes, so any Node can check a chain without this code.
 *
 * A reader hashes every frame twice, and at a few hundred bytes a frame the cost of a call, not the hashing,
 * dominates. hash-wasm's hashers write into a buffer inside their WebAssembly memory and allocate nothing per
 * call: its BLAKE2b is ~3x node:crypto's one-shot (whose OpenSSL fetch and output Buffer cost more than the
 * compression of one block) and its BLAKE3 ~1.3x blake3-wasm's on small payloads; blake3-wasm stays for large
 * ones, where it is the faster. hash-wasm compiles its modules asynchronously, so until `hashersReady` settles
 * (one turn of the event loop after import) the same values come from node:crypto and blake3-wasm; a test holds
 * both paths to the same bytes.
 */
import * as crypto from 'node:crypto';
import { hash as blake3wasm } from 'blake3-wasm';
import { createBLAKE2b, createBLAKE3, type IHasher } from 'hash-wasm';

export const HASH_BYTES = 32;

/** `crypto.hash` (Node 20.12+): one call, no Hash object. */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer })
  .hash;
const CHAIN_INPUT_BYTES = HASH_BYTES + 52;
const chainInput = new Uint8Array(CHAIN_INPUT_BYTES);
/** Below this many bytes hash-wasm's BLAKE3 is the faster; above it blake3-wasm's. */
const SMALL_BLAKE3_BYTES = 4096;

let smallBlake3: IHasher | undefined;
let blake2b512: IHasher | undefined;

/** Settles once the in-memory hashers are compiled; hashing before that is correct, only slower. */
export const hashersReady: Promise<void> = Promise.all([createBLAKE3(256), createBLAKE2b(512)]).then(
  ([b3, b2]) => {
    smallBlake3 = b3;
    blake2b512 = b2;
  },
  // A runtime without WebAssembly compilation keeps the fallbacks, which give the same hashes.
  () => {},
);

/** Which implementations hash small inputs right now. */
export function activeHashers(): { blake3: string; chain: string } {
  return {
    blake3: smallBlake3 ? 'hash-wasm' : 'blake3-wasm',
    chain: blake2b512 ? 'hash-wasm' : 'node:crypto',
  };
}

/** Switches to the fallbacks (or back), for the test that holds both paths to the same values. */
export function useFallbackHashers(fallback: boolean): () => void {
  const saved = [smallBlake3, blake2b512] as const;
  if (fallback) {
    smallBlake3 = undefined;
    blake2b512 = undefined;
  }
  return () => {
    [smallBlake3, blake2b512] = saved;
  };
}

export function blake3(bytes: Uint8Array): Uint8Array {
  if (smallBlake3 && bytes.byteLength < SMALL_BLAKE3_BYTES) {
    smallBlake3.init();
    smallBlake3.update(bytes);
    return smallBlake3.digest('binary');
  }
  const out = blake3wasm(bytes) as Buffer;
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** chain_i = BLAKE2b-512(chain_{i-1} || frame bytes 0..52)[0..32). */
export function chainNext(previous: Uint8Array, frameFields: Uint8Array): Uint8Array {
  if (previous.byteLength + frameFields.byteLength === CHAIN_INPUT_BYTES) {
    chainInput.set(previous, 0);
    chainInput.set(frameFields, previous.byteLength);
    return hashChainInput();
  }
  if (blake2b512) {
    blake2b512.init();
    blake2b512.update(previous).update(frameFields);
    return blake2b512.digest('binary').subarray(0, HASH_BYTES);
  }
  const d = crypto.createHash('blake2b512').update(previous).update(frameFields).digest();
  return new Uint8Array(d.buffer, d.byteOffset, HASH_BYTES);
}

/**
 * The same chain step with the frame's 52 bytes given as its head fields (bytes 0..20) and its payload's BLAKE3:
 * a version-3 head does not store the hash, so there are no 52 contiguous bytes to pass.
 */
export function chainNextParts(
  previous: Uint8Array,
  headFields: Uint8Array,
  payloadHash: Uint8Array,
): Uint8Array {
  if (previous.byteLength + headFields.byteLength + payloadHash.byteLength !== CHAIN_INPUT_BYTES) {
    const joined = new Uint8Array(headFields.byteLength + payloadHash.byteLength);
    joined.set(headFields, 0);
    joined.set(payloadHash, headFields.byteLength);
    return chainNext(previous, joined);
  }
  chainInput.set(previous, 0);
  chainInput.set(headFields, previous.byteLength);
  chainInput.set(payloadHash, previous.byteLength + headFields.byteLength);
  return hashChainInput();
}

/** The chain step over `chainInput` as filled by the caller: one contiguous 84-byte input, one call. */
function hashChainInput(): Uint8Array {
  if (blake2b512) {
    blake2b512.init();
    blake2b512.update(chainInput);
    return blake2b512.digest('binary').subarray(0, HASH_BYTES);
  }
  const d = oneShot
    ? oneShot('blake2b512', chainInput, 'buffer')
    : crypto.createHash('blake2b512').update(chainInput).digest();
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
