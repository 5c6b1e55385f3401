/** A structured health report for a tape, for CLIs and recovery code that must not throw on bad files. */
import { type CursorOptions, openTape, type TornTail } from './cursor';
import { TapeError } from './errors';
import { openSource } from './source';

export interface VerifyReport {
  /** True when every byte verified: no corruption, no torn tail, header fine. A sealed tape need not be. */
  ok: boolean;
  sealed: boolean;
  /**
   * Frames the file appears to hold: the verified ones, plus (after a fault) those a walk along the unverified
   * length fields finds. An estimate past `firstBadFrame`.
   */
  frames: number;
  /** Frames before the first fault, all verified: what `readTape(..., { recover: true })` returns. */
  recoverableFrames: number;
  /** Index of the first frame that failed, `null` if none did or the header failed. */
  firstBadFrame: number | null;
  /** Byte offset of the fault (of the torn tail when that is the only problem); `null` when ok. */
  offset: number | null;
  /** Human-readable cause; `null` when ok. */
  reason: string | null;
  /** The error's code (`TAPE_CORRUPT`, ...) or `TORN_TAIL`; `null` when ok. */
  code: string | null;
  tornTail: TornTail | null;
  byteLength: number;
}

export function verifyTape(input: string | Uint8Array, options: CursorOptions = {}): VerifyReport {
  const size = sizeOf(input);
  let cursor: ReturnType<typeof openTape>;
  try {
    cursor = openTape(input, { ...options, keepBlobs: false });
  } catch (err) {
    if (!(err instanceof TapeError)) throw err;
    return {
      ok: false,
      sealed: false,
      frames: 0,
      recoverableFrames: 0,
      firstBadFrame: null,
      offset: err.offset,
      reason: err.message,
      code: err.code,
      tornTail: null,
      byteLength: size,
    };
  }
  try {
    for (;;) {
      try {
        if (!cursor.next()) break;
      } catch (err) {
        if (!(err instanceof TapeError)) throw err;
        return {
          ok: false,
          sealed: false,
          frames: cursor.frameCount + walkFrames(input, cursor.offset, cursor.headBytes),
          recoverableFrames: cursor.frameCount,
          firstBadFrame: err.frameIndex,
          offset: err.offset,
          reason: err.message,
          code: err.code,
          tornTail: null,
          byteLength: size,
        };
      }
    }
    const torn = cursor.tornTail;
    return {
      ok: torn === null,
      sealed: cursor.sealed,
      frames: cursor.frameCount,
      recoverableFrames: cursor.frameCount,
      firstBadFrame: null,
      offset: torn ? torn.offset : null,
      reason: torn
        ? `torn tail: ${torn.bytesDropped} bytes at byte ${torn.offset} do not form a complete frame`
        : null,
      code: torn ? 'TORN_TAIL' : null,
      tornTail: torn,
      byteLength: size,
    };
  } finally {
    cursor.close();
  }
}

function sizeOf(input: string | Uint8Array): number {
  const s = openSource(input);
  try {
    return s.size;
  } finally {
    s.close();
  }
}

/** Counts plausible frames from `offset` by their length fields alone (at least the bad one itself). */
function walkFrames(input: string | Uint8Array, offset: number, headBytes: number): number {
  const s = openSource(input);
  try {
    let n = 0;
    let o = offset;
    while (o + headBytes <= s.size) {
      const b = s.read(o, 4);
      const len = new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
      n++;
      if (len < headBytes || o + len > s.size) break;
      o += len;
    }
    return Math.max(n, 1);
  } finally {
    s.close();
  }
}
