import { describe, expect, it } from 'vitest';
import {
  readTape,
  TapeCorruptError,
  TapeError,
  TapeMagicError,
  TapeTruncatedError,
  TapeVersionError,
  verifyTape,
} from '../../../src/recorder/tape';
import { type FormatVersion, READABLE_VERSIONS } from '../../../src/recorder/tape/header';
import { fakeClock, frameBounds, makeTape, sampleTape } from './helpers';

describe.each([2, 3] as FormatVersion[])('torn tails (format version %i)', (version) => {
  it('a tape cut at every byte offset yields exactly its complete frames and reports the torn tail', async () => {
    for (const sealed of [true, false]) {
      const full = await sampleTape(sealed, version);
      const { headerEnd, frames } = frameBounds(full);
      const whole = readTape(full);
      expect(whole.frames.length).toBe(frames.length);
      for (let cut = 0; cut <= full.byteLength; cut++) {
        const bytes = full.slice(0, cut);
        if (cut < headerEnd) {
          expect(() => readTape(bytes), `cut ${cut}`).toThrow(TapeTruncatedError);
          continue;
        }
        const t = readTape(bytes);
        const complete = frames.filter(([, end]) => end <= cut);
        const lastEnd = complete.length ? complete[complete.length - 1]![1] : headerEnd;
        expect(t.frames.length, `cut ${cut}`).toBe(complete.length);
        expect(t.frames).toEqual(whole.frames.slice(0, complete.length));
        expect(t.byteLength).toBe(lastEnd);
        expect(t.tornTail).toEqual(cut === lastEnd ? null : { offset: lastEnd, bytesDropped: cut - lastEnd });
        expect(t.sealed).toBe(sealed && cut === full.byteLength);
        const report = verifyTape(bytes);
        expect(report.ok).toBe(cut === lastEnd);
        expect(report.recoverableFrames).toBe(complete.length);
      }
    }
  });

  it('a zero-filled tail (file grown before its data landed) is a torn tail', async () => {
    const full = await sampleTape(false, version);
    const padded = new Uint8Array(full.byteLength + 4096);
    padded.set(full);
    const t = readTape(padded);
    expect(t.tornTail).toEqual({ offset: full.byteLength, bytesDropped: 4096 });
  });
});

describe.each([2, 3] as FormatVersion[])('bit flips (format version %i)', (version) => {
  it('every single-bit flip of a small sealed tape is detected, at the frame that holds the bit', async () => {
    const full = await sampleTape(true, version);
    const { headerEnd, frames } = frameBounds(full);
    const frameOf = (byte: number) => frames.findIndex(([s, e]) => byte >= s && byte < e);
    let flips = 0;
    for (let byte = 0; byte < full.byteLength; byte++) {
      for (let bit = 0; bit < 8; bit++) {
        const bytes = full.slice();
        bytes[byte]! ^= 1 << bit;
        flips++;
        let err: unknown;
        try {
          readTape(bytes);
        } catch (e) {
          err = e;
        }
        expect(err, `byte ${byte} bit ${bit}`).toBeInstanceOf(TapeError);
        const te = err as TapeError;
        if (byte < 8) expect(te).toBeInstanceOf(TapeMagicError);
        // A flip that leaves another readable version fails the header checksum instead.
        else if (byte < 10 && !READABLE_VERSIONS.includes(bytes[8]! | (bytes[9]! << 8)))
          expect(te).toBeInstanceOf(TapeVersionError);
        else if (byte < headerEnd) expect(te.frameIndex).toBeNull();
        else {
          expect(te).toBeInstanceOf(TapeCorruptError);
          expect(te.frameIndex, `byte ${byte} bit ${bit}: ${te.message}`).toBe(frameOf(byte));
          expect(te.recoverableFrames).toBe(frameOf(byte));
          expect(te.message).toContain(`frame ${frameOf(byte)} at byte ${frames[frameOf(byte)]![0]}`);
        }
        const report = verifyTape(bytes);
        expect(report.ok).toBe(false);
      }
    }
    expect(flips).toBe(full.byteLength * 8);
  });

  it('heavily sampled bit flips on a bigger tape are all detected', async () => {
    const full = await makeTape(
      async (w) => {
        for (let step = 0; step < 60; step++) {
          const blob = await w.putBlob(new TextEncoder().encode(`tool output ${step} `.repeat(40)), { step });
          await w.append({
            kind: 'tool.call',
            step,
            payload: { toolName: 'grep', callId: `c${step}`, args: { q: step } },
          });
          await w.append({ kind: 'tool.result', step, payload: { callId: `c${step}`, output: blob } });
        }
        await w.seal({ status: 'completed' });
      },
      undefined,
      { fsync: 'none', nowUs: fakeClock, formatVersion: version },
    );
    const { frames } = frameBounds(full);
    let seed = 12345;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 4000; i++) {
      const byte = rand() % full.byteLength;
      const bytes = full.slice();
      bytes[byte]! ^= 1 << (rand() % 8);
      let err: unknown;
      try {
        readTape(bytes);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TapeError);
      const idx = frames.findIndex(([s, e]) => byte >= s && byte < e);
      expect((err as TapeError).frameIndex).toBe(idx === -1 ? null : idx);
    }
  });

  it('swapping two frames, or dropping one, breaks the chain', async () => {
    const full = await sampleTape(false, version);
    const { headerEnd, frames } = frameBounds(full);
    const parts = frames.map(([s, e]) => full.slice(s, e));
    const join = (ps: Uint8Array[]) => Buffer.concat([full.subarray(0, headerEnd), ...ps]);
    const swapped = [...parts];
    [swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!];
    expect(() => readTape(join(swapped))).toThrow(
      expect.objectContaining({ reason: 'chain', frameIndex: 3 }),
    );
    const dropped = parts.filter((_, i) => i !== 2);
    expect(() => readTape(join(dropped))).toThrow(
      expect.objectContaining({ reason: 'chain', frameIndex: 2 }),
    );
    const t = readTape(join(dropped), { recover: true });
    expect(t.frames.length).toBe(2);
    expect(t.corruption?.reason).toBe('chain');
  });
});

describe('header errors', () => {
  it('bad magic, unknown version and short files are distinct typed errors', async () => {
    const full = await sampleTape(true);
    const notTape = full.slice();
    notTape[0] = 0x50;
    expect(() => readTape(notTape)).toThrow(TapeMagicError);
    expect(() => readTape(new TextEncoder().encode('hello world, this is not a tape'))).toThrow(
      TapeMagicError,
    );
    const v4 = full.slice();
    v4[8] = 4;
    expect(() => readTape(v4)).toThrow(TapeVersionError);
    expect(() => readTape(v4)).toThrow('format version 4 is not supported (this reader knows 1, 2 and 3)');
    expect(() => readTape(full.slice(0, 5))).toThrow(TapeTruncatedError);
    expect(() => readTape(new Uint8Array(0))).toThrow(TapeTruncatedError);
    expect(verifyTape(v4)).toMatchObject({ ok: false, code: 'TAPE_VERSION', firstBadFrame: null, offset: 8 });
  });

  it('data after the seal is corruption, not a torn tail', async () => {
    const full = await sampleTape(true);
    const extra = Buffer.concat([full, Buffer.from([1, 2, 3])]);
    expect(() => readTape(extra)).toThrow(expect.objectContaining({ reason: 'after-seal' }));
  });
});
