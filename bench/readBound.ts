/**
 * The floors under reading and verifying a tape, each timed on the same file's bytes read in one call, with
 * nothing else (no frame objects, no checks of structure, no comparisons):
 * - `boundUs`, what the format asks of a reader: every frame's payload BLAKE3-hashed, every frame head
 *   BLAKE2b-chained (and, from format version 3, its CRC-32 checked), every non-blob payload decoded, every
 *   compressed blob inflated and its key hashed;
 * - `wholeFileUs`, what would be left if a sealed tape carried one hash of the whole file (#34's suggested
 *   lever) and the reader trusted it in place of the per-frame hashes: one BLAKE3 over the file, the decodes
 *   and the inflates. It bounds what that format change could give before it is built.
 * The reader's per-frame figure is printed beside them.
 */
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { blake3, chainNext, readTape } from '../src/recorder/tape';
import { crc32 } from '../src/recorder/tape/crc32';
import { CHAINED_BYTES, HEAD_FIELDS_BYTES } from '../src/recorder/tape/frame';
import { chainNextParts } from '../src/recorder/tape/hash';
import { DEFAULT_LIMITS } from '../src/recorder/tape/limits';
import { decodeCheckedPayload } from '../src/recorder/tape/payloadDecoder';
import { median } from './harness';

// Frame layout (src/recorder/tape/FORMAT.md): a head of 32 bytes (format 3) or 84 (formats 1 and 2), then the
// payload; the chain covers the head's first 20 bytes and the payload's BLAKE3 (stored as head bytes 20..52 in
// an 84-byte head). A compressed blob's payload is its 32-byte key, then the DEFLATE stream.
const KEY = 32;

export function readVerifyAndBound(
  file: string,
  rounds: number,
): { frames: number; readUs: number; boundUs: number; wholeFileUs: number } {
  const tape = readTape(file);
  const compact = tape.version >= 3;
  const spans = tape.frames.map((f) => ({
    o: f.offset,
    l: f.length,
    p: f.offset + f.length - f.payloadLength,
    decode: f.kind !== 'blob' && f.encoding === 'msgpack',
    inflate: f.compressed,
  }));
  const first = tape.frames[0]?.offset ?? 0;
  const decodeAndInflate = (payload: Uint8Array, s: (typeof spans)[number]) => {
    if (s.decode) decodeCheckedPayload(payload, DEFAULT_LIMITS);
    if (s.inflate) return inflateRawSync(payload.subarray(KEY));
    return undefined;
  };
  const bound = () => {
    const bytes = readFileSync(file);
    let chain: Uint8Array = blake3(bytes.subarray(0, first));
    for (const s of spans) {
      const payload = bytes.subarray(s.p, s.o + s.l);
      const hash = blake3(payload);
      if (compact) {
        crc32(bytes, s.o, s.o + HEAD_FIELDS_BYTES);
        chain = chainNextParts(chain, bytes.subarray(s.o, s.o + HEAD_FIELDS_BYTES), hash);
      } else chain = chainNext(chain, bytes.subarray(s.o, s.o + CHAINED_BYTES));
      const inflated = decodeAndInflate(payload, s);
      if (inflated) blake3(inflated);
    }
  };
  const wholeFile = () => {
    const bytes = readFileSync(file);
    blake3(bytes);
    for (const s of spans) decodeAndInflate(bytes.subarray(s.p, s.o + s.l), s);
  };
  // Alternated, so all three see the same machine; a warm-up round first.
  const read: number[] = [];
  const floor: number[] = [];
  const whole: number[] = [];
  for (let r = 0; r <= rounds; r++) {
    const t0 = performance.now();
    readTape(file);
    const t1 = performance.now();
    bound();
    const t2 = performance.now();
    wholeFile();
    const t3 = performance.now();
    if (r > 0) {
      read.push(((t1 - t0) * 1000) / spans.length);
      floor.push(((t2 - t1) * 1000) / spans.length);
      whole.push(((t3 - t2) * 1000) / spans.length);
    }
  }
  return {
    frames: spans.length,
    readUs: median(read),
    boundUs: median(floor),
    wholeFileUs: median(whole),
  };
}
