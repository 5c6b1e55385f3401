/**
 * The floor under reading and verifying a tape: the same file's bytes read in one call, every frame's payload
 * BLAKE3-hashed, every frame header BLAKE2b-chained and every non-blob payload decoded, with nothing else (no
 * frame objects, no checks of structure, no comparisons). The reader's per-frame figure is printed beside it.
 */
import { readFileSync } from 'node:fs';
import { blake3, chainNext, readTape } from '../src/recorder/tape';
import { DEFAULT_LIMITS } from '../src/recorder/tape/limits';
import { decodeCheckedPayload } from '../src/recorder/tape/payloadDecoder';
import { median } from './harness';

// Frame layout (src/recorder/tape/FORMAT.md): an 84-byte frame header, of which the chain covers the first 52.
const FRAME_HEADER = 84;
const CHAINED = 52;

export function readVerifyAndBound(
  file: string,
  rounds: number,
): { frames: number; readUs: number; boundUs: number } {
  const tape = readTape(file);
  const spans = tape.frames.map((f) => ({
    o: f.offset,
    l: f.length,
    decode: f.kind !== 'blob' && f.encoding === 'msgpack',
  }));
  const first = tape.frames[0]?.offset ?? 0;
  const bound = () => {
    const bytes = readFileSync(file);
    let chain: Uint8Array = blake3(bytes.subarray(0, first));
    for (const s of spans) {
      const payload = bytes.subarray(s.o + FRAME_HEADER, s.o + s.l);
      blake3(payload);
      chain = chainNext(chain, bytes.subarray(s.o, s.o + CHAINED));
      if (s.decode) decodeCheckedPayload(payload, DEFAULT_LIMITS);
    }
  };
  // Alternated, so both see the same machine; a warm-up round first.
  const read: number[] = [];
  const floor: number[] = [];
  for (let r = 0; r <= rounds; r++) {
    const t0 = performance.now();
    readTape(file);
    const t1 = performance.now();
    bound();
    const t2 = performance.now();
    if (r > 0) {
      read.push(((t1 - t0) * 1000) / spans.length);
      floor.push(((t2 - t1) * 1000) / spans.length);
    }
  }
  return { frames: spans.length, readUs: median(read), boundUs: median(floor) };
}
