/**
 * Compressed blob frames (format versions 2 and 3, FORMAT.md "Compressed blobs"): the payload is the blob's 32-byte key
 * followed by its bytes as one raw DEFLATE stream (RFC 1951). The frame's payload hash covers the stored bytes,
 * as for every frame, so the chain still authenticates every byte of the file; the key is checked against the
 * inflated bytes, so a blob keeps the content address it would have had uncompressed.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { blake3, bytesEqualAt, HASH_BYTES, toHex } from './hash';

/** Blobs shorter than this are stored as they are: a DEFLATE stream's few bytes of framing eat the gain. */
export const COMPRESS_MIN_BYTES = 128;
/**
 * Blobs longer than this are stored as they are. Compression runs synchronously on the writer's thread while the
 * frame takes its place in the chain; a megabyte takes about 10 ms to deflate, the most one append may block.
 */
export const COMPRESS_MAX_BYTES = 1024 * 1024;

/**
 * The compressed payload for `bytes` (key first), or undefined when compressing saves less than an eighth:
 * incompressible content (already compressed files, random bytes) is then stored as it is and costs no inflate
 * on read.
 */
export function compressBlob(bytes: Uint8Array, key: Uint8Array): Uint8Array | undefined {
  if (bytes.byteLength < COMPRESS_MIN_BYTES || bytes.byteLength > COMPRESS_MAX_BYTES) return undefined;
  const deflated = deflateRawSync(bytes);
  const size = HASH_BYTES + deflated.byteLength;
  if (size > bytes.byteLength - (bytes.byteLength >> 3)) return undefined;
  const payload = new Uint8Array(size);
  payload.set(key, 0);
  payload.set(deflated, HASH_BYTES);
  return payload;
}

export type InflateResult =
  | { ok: true; key: string; bytes: Uint8Array }
  | { ok: false; reason: 'blob-inflate' | 'blob-key'; detail: string }
  | { ok: false; reason: 'limit'; detail: string };

/** Inflates a compressed blob payload, at most `maxBytes` of output, and checks its key. */
export function inflateBlob(payload: Uint8Array, maxBytes: number): InflateResult {
  if (payload.byteLength < HASH_BYTES + 1) {
    return {
      ok: false,
      reason: 'blob-inflate',
      detail: `compressed blob payload of ${payload.byteLength} bytes is shorter than its key and a DEFLATE stream`,
    };
  }
  const stream = payload.subarray(HASH_BYTES);
  let bytes: Uint8Array;
  try {
    // `info` reports how much input the stream used: bytes after its end are an error, as after a MessagePack value.
    const { buffer, engine } = inflateRawSync(stream, {
      maxOutputLength: maxBytes,
      info: true,
    }) as unknown as {
      buffer: Buffer;
      engine: { bytesWritten: number };
    };
    if (engine.bytesWritten !== stream.byteLength) {
      return {
        ok: false,
        reason: 'blob-inflate',
        detail: `${stream.byteLength - engine.bytesWritten} bytes follow the compressed blob's DEFLATE stream`,
      };
    }
    bytes = buffer;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_BUFFER_TOO_LARGE') {
      return { ok: false, reason: 'limit', detail: `compressed blob inflates past ${maxBytes} bytes` };
    }
    return { ok: false, reason: 'blob-inflate', detail: `compressed blob does not inflate: ${e.message}` };
  }
  const hash = blake3(bytes);
  if (!bytesEqualAt(hash, 0, payload, 0, HASH_BYTES)) {
    return {
      ok: false,
      reason: 'blob-key',
      detail: `compressed blob's key ${toHex(payload.subarray(0, HASH_BYTES))} is not the BLAKE3 of its ${bytes.byteLength} inflated bytes (${toHex(hash)})`,
    };
  }
  return { ok: true, key: toHex(hash), bytes };
}
