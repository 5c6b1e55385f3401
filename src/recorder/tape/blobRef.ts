import { fromHex, HASH_BYTES, toHex } from './hash';

/**
 * A pointer from a payload to a blob frame, by the blob's BLAKE3-256. Encoded as MessagePack ext type 1 so a
 * reader can find every reference without knowing each kind's schema, and reject one that dangles.
 */
export class BlobRef {
  readonly bytes: Uint8Array;
  /**
   * Hex, made when first asked for: decoding a conversation's node blobs makes two references each, and most
   * are only followed by another decode, so hex-encoding every one was the largest cost of reading a timeline.
   */
  #hash: string | undefined;

  constructor(hash: Uint8Array | string) {
    const bytes = typeof hash === 'string' ? fromHex(hash) : new Uint8Array(hash);
    if (bytes.byteLength !== HASH_BYTES)
      throw new TypeError(`a blob hash is ${HASH_BYTES} bytes, got ${bytes.byteLength}`);
    this.bytes = bytes;
    if (typeof hash === 'string') this.#hash = hash;
  }

  get hash(): string {
    this.#hash ??= toHex(this.bytes);
    return this.#hash;
  }

  toString(): string {
    return `blob:${this.hash}`;
  }

  toJSON(): string {
    return this.toString();
  }
}

export function blobRef(hash: Uint8Array | string | BlobRef): BlobRef {
  return hash instanceof BlobRef ? hash : new BlobRef(hash);
}
