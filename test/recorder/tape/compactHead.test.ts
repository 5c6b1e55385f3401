import { createHash } from 'node:crypto';
import { statSync, truncateSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blake3, readTape, TapeWriter, verifyTape } from '../../../src/recorder/tape';
import { crc32 } from '../../../src/recorder/tape/crc32';
import { fakeClock, frameBounds, HEADER, makeTape, sampleTape, tempDir } from './helpers';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('version 3: a 32-byte frame head', () => {
  it('CRC-32 is the IEEE one zlib and PNG use (its check value)', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    expect(crc32(new Uint8Array([1, 2, 3, 4, 5]), 1, 3)).toBe(crc32(new Uint8Array([2, 3])));
  });

  it('lays out length, kind, encoding, reserved, step, time, CRC-32 and 8 bytes of the chain, byte by byte', async () => {
    const bytes = await makeTape(
      async (w) => {
        await w.append({ kind: 'random', step: 7, payload: { values: [1] }, recordedAtUs: 0x0102_0304_0506 });
      },
      HEADER,
      { fsync: 'none', nowUs: fakeClock },
    );
    expect(Buffer.from(bytes).readUInt16LE(8)).toBe(3);
    const { headerEnd, frames } = frameBounds(bytes);
    const [start, end] = frames[0]!;
    const frame = Buffer.from(bytes.subarray(start, end));
    const payload = frame.subarray(32);
    expect(frame.readUInt32LE(0)).toBe(32 + payload.byteLength);
    expect(frame[4]).toBe(6); // random
    expect(frame[5]).toBe(1); // MessagePack
    expect(frame.readUInt16LE(6)).toBe(0);
    expect(frame.readUInt32LE(8)).toBe(7);
    expect(frame.readBigUInt64LE(12)).toBe(0x0102_0304_0506n);
    expect(frame.readUInt32LE(20)).toBe(crc32(frame, 0, 20));
    // The chain is version 2's function of the same 52 bytes: the head's first 20 and the payload's BLAKE3,
    // here checked with node:crypto alone.
    const seed = bytes.subarray(headerEnd - 32, headerEnd);
    const chain = createHash('blake2b512')
      .update(seed)
      .update(frame.subarray(0, 20))
      .update(blake3(payload))
      .digest()
      .subarray(0, 32);
    expect(hex(frame.subarray(24, 32))).toBe(hex(chain.subarray(0, 8)));
    const tape = readTape(bytes);
    expect(tape.frames[0]).toMatchObject({
      length: frame.byteLength,
      payloadLength: payload.byteLength,
      step: 7,
      recordedAtUs: 0x0102_0304_0506,
      payloadHash: hex(blake3(payload)),
      chain: hex(chain),
      payload: { values: [1] },
    });
  });

  it('the same frames take 52 bytes fewer each than in version 2 and read back the same', async () => {
    const v2 = await sampleTape(true, 2);
    const v3 = await sampleTape(true, 3);
    const a = readTape(v2);
    const b = readTape(v3);
    expect(a.version).toBe(2);
    expect(b.version).toBe(3);
    expect(b.frames.length).toBe(a.frames.length);
    expect(v2.byteLength - v3.byteLength).toBe(52 * a.frames.length);
    const strip = (t: ReturnType<typeof readTape>) =>
      t.frames.map(({ kind, step, payload, payloadHash, payloadLength, refs }) => ({
        kind,
        step,
        payload: kind === 'seal' ? undefined : payload,
        payloadHash: kind === 'seal' ? undefined : payloadHash,
        payloadLength,
        refs,
      }));
    expect(strip(b)).toEqual(strip(a));
    // The seal frame: a 32-byte head and its 48-byte payload.
    expect(b.frames.at(-1)).toMatchObject({ kind: 'seal', length: 80 });
    expect(b.sealed).toBe(true);
  });

  it('a length field that points past the end is a corrupt head, not a torn tail: nothing after it is dropped', async () => {
    const full = await sampleTape(false);
    const { frames } = frameBounds(full);
    const [start] = frames[1]!;
    const bytes = Buffer.from(full);
    bytes.writeUInt32LE(bytes.readUInt32LE(start) + 10_000, start);
    expect(() => readTape(bytes)).toThrow(
      expect.objectContaining({ reason: 'head-check', frameIndex: 1, offset: start }),
    );
    expect(() => readTape(bytes)).toThrow(/frame head check mismatch/);
    // A recovering writer keeps the frames before it and refuses to truncate over the rest.
    expect(verifyTape(bytes)).toMatchObject({
      ok: false,
      firstBadFrame: 1,
      recoverableFrames: 1,
      tornTail: null,
    });
  });

  it('a head that reached the disk without all its payload is a torn tail, at the frame it starts', async () => {
    const full = await sampleTape(false);
    const { frames } = frameBounds(full);
    const [start, end] = frames.at(-1)!;
    for (const cut of [start + 5, start + 32, end - 1]) {
      const t = readTape(full.subarray(0, cut));
      expect(t.frames.length, `cut ${cut}`).toBe(frames.length - 1);
      expect(t.tornTail).toEqual({ offset: start, bytesDropped: cut - start });
    }
  });

  it('a flipped payload byte, a flipped chain byte and a stale head are each caught at their frame', async () => {
    const full = await sampleTape(true);
    const { frames } = frameBounds(full);
    const [start, end] = frames[2]!;
    const flip = (at: number) => {
      const b = full.slice();
      b[at] = b[at]! ^ 0x40;
      return b;
    };
    expect(() => readTape(flip(end - 1))).toThrow(
      expect.objectContaining({ reason: 'chain', frameIndex: 2 }),
    );
    expect(() => readTape(flip(start + 24))).toThrow(
      expect.objectContaining({ reason: 'chain', frameIndex: 2 }),
    );
    expect(() => readTape(flip(start + 8))).toThrow(
      expect.objectContaining({ reason: 'head-check', frameIndex: 2 }),
    );
    // A head edited with its CRC-32 made again still fails: the chain covers the head's fields too.
    const edited = Buffer.from(full);
    edited.writeUInt32LE(99, start + 8);
    edited.writeUInt32LE(crc32(edited, start, start + 20), start + 20);
    expect(() => readTape(edited)).toThrow(expect.objectContaining({ reason: 'chain', frameIndex: 2 }));
  });
});

describe('version 3 tapes continue as version 3', () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  it('reopened after a torn tail: truncated to the last whole frame, chained on, sealed', async () => {
    const p = t.path('v3.jbx');
    const w = await TapeWriter.open(p, HEADER, { fsync: 'none' });
    expect(w.version).toBe(3);
    await w.append({ kind: 'random', step: 0, payload: { values: [1] } });
    await w.append({ kind: 'random', step: 1, payload: { values: [2] } });
    await w.close();
    truncateSync(p, statSync(p).size - 3);
    const again = await TapeWriter.open(p, HEADER, { fsync: 'none' });
    expect(again.version).toBe(3);
    await again.append({ kind: 'random', step: 1, payload: { values: [3] } });
    await again.seal({ status: 'completed' });
    await again.close();
    const tape = readTape(p);
    expect(tape.version).toBe(3);
    expect(tape.tornTail).toBeNull();
    expect(tape.frames.filter((f) => f.kind === 'random').map((f) => f.payload)).toEqual([
      { values: [1] },
      { values: [3] },
    ]);
    expect(tape.seal?.finalChain).toBe(tape.frames.at(-2)!.chain);
    expect(verifyTape(p)).toMatchObject({ ok: true, sealed: true });
  });

  it('a writer asked for version 2 writes 84-byte heads that version-2 rules read', async () => {
    const bytes = await sampleTape(true, 2);
    expect(Buffer.from(bytes).readUInt16LE(8)).toBe(2);
    const tape = readTape(bytes);
    expect(tape.frames.every((f) => f.length - f.payloadLength === 84)).toBe(true);
  });
});
