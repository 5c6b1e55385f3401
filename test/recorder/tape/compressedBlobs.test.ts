import { randomBytes } from 'node:crypto';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { encode } from '@msgpack/msgpack';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  blake3,
  chunkEntries,
  decodeBlob,
  derefValue,
  kindCode,
  openTape,
  readTape,
  TapeCorruptError,
  TapeLimitError,
  TapeWriter,
  verifyTape,
} from '../../../src/recorder/tape';
import { encodeFrame } from '../../../src/recorder/tape/frame';
import { encodeHeader, type FormatVersion } from '../../../src/recorder/tape/header';
import { fakeClock, HEADER, makeTape, tempDir } from './helpers';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
// A reply as a model writes one: prose that repeats its own words, about 1.2 KB.
const REPLY = {
  role: 'assistant',
  content: 'Checked the ledger for invoice 4471 and the refund policy before answering. '.repeat(16),
};

/** A tape of one header and the given frames, each chained after the one before, hashes all valid. */
function craft(
  version: FormatVersion,
  frames: { kind: string; encoding: number; payload: Uint8Array }[],
): Uint8Array {
  const { bytes, checksum } = encodeHeader(HEADER, version);
  const parts = [bytes];
  let chain = checksum;
  for (const f of frames) {
    const enc = encodeFrame(
      chain,
      { kind: kindCode(f.kind as 'blob'), encoding: f.encoding, step: 0, recordedAtUs: 1 },
      f.payload,
      version,
    );
    parts.push(enc.bytes);
    chain = enc.chain;
  }
  return new Uint8Array(Buffer.concat(parts));
}

const keyed = (key: Uint8Array, stream: Uint8Array) => new Uint8Array(Buffer.concat([key, stream]));

describe('version-2 and later tapes store blobs compressed', () => {
  it('deflates a compressible blob, keeps its content address, and reads back the same bytes', async () => {
    const bytes = await makeTape(async (w) => {
      expect(w.version).toBe(3);
      const ref = await w.putValue(REPLY, { step: 0 });
      await w.append({ kind: 'llm.response', step: 0, payload: { message: ref } });
    });
    const tape = readTape(bytes);
    const blobFrame = tape.frames.find((f) => f.kind === 'blob')!;
    const plain = encode(REPLY, { sortKeys: true });
    expect(blobFrame.compressed).toBe(true);
    expect(blobFrame.encoding).toBe('msgpack');
    expect(blobFrame.blobKey).toBe(hex(blake3(plain)));
    expect(blobFrame.payloadHash).not.toBe(blobFrame.blobKey);
    // 1,243 bytes of MessagePack stored as the key and a DEFLATE stream of under 150 bytes.
    expect(plain.byteLength).toBe(1243);
    expect(blobFrame.length).toBe(32 + blobFrame.payloadLength);
    expect(blobFrame.payloadLength).toBeLessThan(32 + 150);
    const blob = tape.blobs.get(blobFrame.blobKey!)!;
    expect(Buffer.from(blob.bytes).equals(Buffer.from(plain))).toBe(true);
    expect(decodeBlob(blob)).toEqual(REPLY);
    expect(tape.frames[1]!.refs).toEqual([blobFrame.blobKey]);
    expect(verifyTape(bytes)).toMatchObject({ ok: true });
  });

  it('stores small and incompressible blobs as they are', async () => {
    const noise = randomBytes(4096);
    const bytes = await makeTape(async (w) => {
      await w.putValue({ role: 'user', content: 'hi' });
      await w.putBlob(noise);
    });
    const blobs = readTape(bytes).frames.filter((f) => f.kind === 'blob');
    expect(blobs.map((f) => f.compressed)).toEqual([false, false]);
    expect(blobs[1]!.blobKey).toBe(hex(blake3(noise)));
    expect(blobs[1]!.length).toBe(32 + 4096);
  });

  it('writes no compressed blob when compression is off', async () => {
    const bytes = await makeTape(async (w) => void (await w.putValue(REPLY)), HEADER, {
      fsync: 'none',
      nowUs: fakeClock,
      compress: false,
    });
    const [blob] = readTape(bytes).frames;
    expect(blob!.compressed).toBe(false);
    expect(blob!.length).toBe(32 + 1243);
  });

  it('dedupes a blob by its content address whether or not it was stored compressed', async () => {
    const bytes = await makeTape(async (w) => {
      const a = await w.putValue(REPLY);
      const b = await w.putBlob(encode(REPLY, { sortKeys: true }), { encoding: 'msgpack' });
      expect(b.hash).toBe(a.hash);
    });
    expect(readTape(bytes).frames).toHaveLength(1);
  });
});

describe('version-1 tapes keep reading and keep their version', () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  it('reads a tape a version-1 writer recorded (committed fixture), frame by frame verified', () => {
    const fixture = join(
      __dirname,
      '../../timetravel/replay/fixtures/histories/outcome-recorded-once/research.jbx',
    );
    const cursor = openTape(fixture);
    let frames = 0;
    let compressed = 0;
    try {
      for (let f = cursor.next(); f; f = cursor.next()) {
        frames++;
        if (f.compressed) compressed++;
      }
    } finally {
      cursor.close();
    }
    expect(cursor.version).toBe(1);
    expect(readFileSync(fixture).readUInt16LE(8)).toBe(1);
    expect(cursor.sealed).toBe(true);
    expect(frames).toBe(cursor.seal!.frameCount + 1);
    expect(compressed).toBe(0);
  });

  it('reads a tape the version-2 recorder wrote (committed fixture): 84-byte heads, compressed blobs, chunk text', () => {
    // Recorded by Jukebox at 29913b5, the last version-2 writer, in a test run of the research agent.
    const fixture = join(__dirname, 'fixtures/format2-research.jbx');
    const tape = readTape(fixture);
    expect(tape.version).toBe(2);
    expect(readFileSync(fixture).readUInt16LE(8)).toBe(2);
    expect(tape.sealed).toBe(true);
    expect(tape.frames).toHaveLength(139);
    expect(tape.frames.every((f) => f.length - f.payloadLength === 84)).toBe(true);
    expect(tape.frames.filter((f) => f.compressed)).toHaveLength(7);
    expect(verifyTape(fixture)).toMatchObject({ ok: true, sealed: true, frames: 139 });
    // Its chunk entries are inline, their text one blob a batch: the batches of each model step spell the reply
    // its llm.response records.
    const streamed = new Map<string, string>();
    for (const f of tape.frames.filter((x) => x.kind === 'llm.chunk')) {
      const p = f.payload as { activityId: string; attempt: number; chunks: unknown };
      expect(Array.isArray(p.chunks)).toBe(true);
      const text = chunkEntries(p, tape.blobs)
        .map((e) => e[2] ?? '')
        .join('');
      const key = `${p.activityId}/${p.attempt}`;
      streamed.set(key, (streamed.get(key) ?? '') + text);
    }
    const replies = tape.frames
      .filter((f) => f.kind === 'llm.response')
      .map((f) => f.payload as { activityId: string; attempt: number; message: unknown })
      .map(
        (p) =>
          [
            `${p.activityId}/${p.attempt}`,
            (derefValue(tape, p.message) as { content?: unknown }).content,
          ] as const,
      )
      .filter(([, content]) => typeof content === 'string' && content !== '');
    expect(replies.length).toBeGreaterThan(3);
    for (const [attempt, content] of replies) expect(streamed.get(attempt)).toBe(content);
  });

  it('a version-1 tape continued by a version-2 writer gets no compressed blob (reopen and resume)', async () => {
    const p = t.path('v1.jbx');
    const w1 = await TapeWriter.open(p, HEADER, { fsync: 'none', formatVersion: 1 });
    await w1.putValue({ role: 'user', content: 'first' });
    await w1.close();
    const reopened = await TapeWriter.open(p, HEADER, { fsync: 'none' });
    expect(reopened.version).toBe(1);
    await reopened.putValue(REPLY);
    await reopened.close();
    const resumed = await TapeWriter.resume(p, reopened.state()!, { fsync: 'none' });
    expect(resumed.version).toBe(1);
    await resumed.putValue({ ...REPLY, content: `${REPLY.content} again` });
    await resumed.seal({ status: 'completed' });
    await resumed.close();
    const tape = readTape(p);
    expect(readFileSync(p).readUInt16LE(8)).toBe(1);
    expect(tape.frames.filter((f) => f.kind === 'blob').map((f) => f.compressed)).toEqual([
      false,
      false,
      false,
    ]);
    expect(tape.sealed).toBe(true);
  });

  it('a version-2 tape reopened stays version 2, with 84-byte heads, and keeps compressing', async () => {
    const p = t.path('v2.jbx');
    const w = await TapeWriter.open(p, HEADER, { fsync: 'none', formatVersion: 2 });
    await w.putValue({ role: 'user', content: 'first' });
    await w.close();
    const again = await TapeWriter.open(p, HEADER, { fsync: 'none' });
    expect(again.version).toBe(2);
    await again.putValue(REPLY);
    await again.close();
    const tape = readTape(p);
    expect(readFileSync(p).readUInt16LE(8)).toBe(2);
    expect(tape.frames.map((f) => f.compressed)).toEqual([false, true]);
    expect(tape.frames.map((f) => f.length - f.payloadLength)).toEqual([84, 84]);
  });

  it('copies of either version verify with the same reader', async () => {
    const v1 = t.path('a.jbx');
    const w = await TapeWriter.open(v1, HEADER, { fsync: 'none', formatVersion: 1 });
    await w.putValue(REPLY);
    await w.seal({ status: 'completed' });
    await w.close();
    copyFileSync(v1, t.path('b.jbx'));
    expect(verifyTape(t.path('b.jbx'))).toMatchObject({ ok: true });
  });
});

describe('a hostile or damaged compressed blob is a typed error at its frame', () => {
  const plain = new Uint8Array(encode(REPLY, { sortKeys: true }));
  const key = blake3(plain);
  const stream = deflateRawSync(plain);

  it('reads a well-formed crafted one (the crafting is right)', () => {
    const tape = readTape(craft(2, [{ kind: 'blob', encoding: 3, payload: keyed(key, stream) }]));
    expect(tape.frames[0]!.blobKey).toBe(hex(key));
  });

  it('a key that is not the inflated bytes BLAKE3: blob-key', () => {
    const wrong = blake3(new Uint8Array([1]));
    const bytes = craft(2, [{ kind: 'blob', encoding: 3, payload: keyed(wrong, stream) }]);
    expect(() => readTape(bytes)).toThrow(expect.objectContaining({ reason: 'blob-key', frameIndex: 0 }));
    expect(() => readTape(bytes)).toThrow(/is not the BLAKE3 of its 1243 inflated bytes/);
  });

  it('a stream that does not inflate, or with bytes after its end: blob-inflate', () => {
    const junk = craft(2, [{ kind: 'blob', encoding: 2, payload: keyed(key, new Uint8Array([1, 2, 3, 4])) }]);
    expect(() => readTape(junk)).toThrow(expect.objectContaining({ reason: 'blob-inflate' }));
    const trailing = craft(2, [
      { kind: 'blob', encoding: 3, payload: keyed(key, Buffer.concat([stream, Buffer.from([0])])) },
    ]);
    expect(() => readTape(trailing)).toThrow(/1 bytes follow the compressed blob's DEFLATE stream/);
    const keyOnly = craft(2, [{ kind: 'blob', encoding: 2, payload: key }]);
    expect(() => readTape(keyOnly)).toThrow(expect.objectContaining({ reason: 'blob-inflate' }));
  });

  it('a stream that inflates past the frame limit stops at the limit (a DEFLATE bomb)', () => {
    const zeros = new Uint8Array(8 * 1024 * 1024);
    const bomb = deflateRawSync(zeros);
    expect(bomb.byteLength).toBeLessThan(10_000);
    const bytes = craft(2, [{ kind: 'blob', encoding: 2, payload: keyed(blake3(zeros), bomb) }]);
    let err: unknown;
    try {
      readTape(bytes, { limits: { maxFrameBytes: 1024 * 1024 } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TapeLimitError);
    expect(err).toMatchObject({ limit: 'maxFrameBytes', frameIndex: 0 });
    // With room for it, the same frame reads.
    expect(readTape(bytes).frames[0]!.blobKey).toBe(hex(blake3(zeros)));
  });

  it('compressed encodings outside a version-2 or later blob frame are corrupt encodings', () => {
    const inV1 = craft(1, [{ kind: 'blob', encoding: 3, payload: keyed(key, stream) }]);
    expect(() => readTape(inV1)).toThrow(
      expect.objectContaining({ reason: 'encoding', offset: encodeHeader(HEADER, 1).bytes.byteLength + 5 }),
    );
    const notBlob = craft(2, [{ kind: 'llm.request', encoding: 3, payload: keyed(key, stream) }]);
    expect(() => readTape(notBlob)).toThrow(TapeCorruptError);
    expect(() => readTape(notBlob)).toThrow(/only valid for blob frames of a version-2 or later tape/);
    const notBlobV3 = craft(3, [{ kind: 'llm.request', encoding: 2, payload: keyed(key, stream) }]);
    expect(() => readTape(notBlobV3)).toThrow(
      expect.objectContaining({ reason: 'encoding', offset: encodeHeader(HEADER, 3).bytes.byteLength + 5 }),
    );
  });

  it('the same content stored compressed and then as it is: duplicate-blob', () => {
    const bytes = craft(2, [
      { kind: 'blob', encoding: 3, payload: keyed(key, stream) },
      { kind: 'blob', encoding: 1, payload: plain },
    ]);
    expect(() => readTape(bytes)).toThrow(
      expect.objectContaining({ reason: 'duplicate-blob', frameIndex: 1 }),
    );
  });

  it('a flipped byte in the stored stream fails the frame: the chain covers every stored byte', async () => {
    // Version 2 stores the payload's hash and names the mismatch after it; version 3 recomputes the hash into
    // the chain, whose stored part then disagrees.
    for (const [formatVersion, reason] of [
      [2, 'payload-hash'],
      [3, 'chain'],
    ] as const) {
      const bytes = await makeTape(async (w) => void (await w.putValue(REPLY)), HEADER, {
        fsync: 'none',
        nowUs: fakeClock,
        formatVersion,
      });
      const last = bytes.slice();
      const at = last.byteLength - 3;
      last[at] = last[at]! ^ 0x01;
      expect(readTape(bytes).frames[0]!.compressed).toBe(true);
      expect(() => readTape(last)).toThrow(expect.objectContaining({ reason, frameIndex: 0 }));
    }
  });
});
