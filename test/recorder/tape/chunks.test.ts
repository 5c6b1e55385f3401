import { describe, expect, it } from 'vitest';
import { BlobRef, chunkEntries, ENTRIES_BLOB_MIN, packChunks, readTape } from '../../../src/recorder/tape';
import { makeTape } from './helpers';

// Deltas as a stream delivers them: ASCII, a multi-byte character split from its neighbours, an empty one, a
// chunk with no text (a tool-call argument piece) that only exists as its raw event.
const ENTRIES = [
  [0, 1, ''],
  [1, 3, 'Refund of '],
  [2, 4, '€120 — '], // 11 bytes: two 3-byte characters
  [3, 9, null, { toolCall: { index: 0, args: '{"amount"' } }],
  [4, 12, 'approved ✓'],
];

describe('llm.chunk text stored once, as a blob of the concatenated deltas', () => {
  it('packs deltas as UTF-8 byte lengths beside one text blob, and reads back the same entries', async () => {
    let stored: Uint8Array | undefined;
    const packed = await packChunks(ENTRIES, {
      blob: async (bytes) => {
        stored = bytes;
        return new BlobRef(new Uint8Array(32));
      },
    });
    expect(Buffer.from(stored!).toString('utf8')).toBe('Refund of €120 — approved ✓');
    expect(packed.chunks).toEqual([
      [0, 1, 0],
      [1, 3, 10],
      [2, 4, 11],
      [3, 9, null, { toolCall: { index: 0, args: '{"amount"' } }],
      [4, 12, 12],
    ]);
    expect(packed.text).toBeInstanceOf(BlobRef);
  });

  it('round-trips through a tape: the reader sees the deltas as they streamed', async () => {
    const bytes = await makeTape(async (w) => {
      const payload = await packChunks(ENTRIES, { blob: (b) => w.putBlob(b, { step: 0 }) });
      await w.append({ kind: 'llm.chunk', step: 0, payload });
    });
    const tape = readTape(bytes);
    const frame = tape.frames.find((f) => f.kind === 'llm.chunk')!;
    expect((frame.payload as { text: unknown }).text).toBeInstanceOf(BlobRef);
    expect(chunkEntries(frame.payload, tape.blobs)).toEqual(ENTRIES);
  });

  it('a batch with no text writes no blob and keeps its entries', async () => {
    const entries = [[0, 2, null, { usage: { out: 3 } }]];
    let puts = 0;
    const put = async () => {
      puts++;
      return new BlobRef(new Uint8Array(32));
    };
    const packed = await packChunks(entries, { blob: put, value: put });
    expect(puts).toBe(0);
    expect(packed).toEqual({ chunks: entries });
    expect(chunkEntries(packed, new Map())).toEqual(entries);
  });

  it('reads frames written before this layout, with each delta in its entry', () => {
    const legacy = {
      activityId: '3',
      attempt: 1,
      chunks: [
        [0, 1, 'Hel'],
        [1, 2, 'lo'],
        [2, 2, null, { x: 1 }],
      ],
    };
    expect(chunkEntries(legacy, new Map())).toEqual(legacy.chunks);
  });

  it('a length past the end of its text gives the text that is there, not an exception', () => {
    const text = new BlobRef(new Uint8Array(32).fill(7));
    const blobs = new Map([
      [text.hash, { hash: text.hash, encoding: 'raw' as const, bytes: Buffer.from('abc'), frameIndex: 0 }],
    ]);
    expect(
      chunkEntries(
        {
          chunks: [
            [0, 1, 2],
            [1, 2, 5],
          ],
          text,
        },
        blobs,
      ),
    ).toEqual([
      [0, 1, 'ab'],
      [1, 2, 'c'],
    ]);
  });
});

describe('in a version-3 tape a batch of 8 or more entries is one MessagePack blob', () => {
  // A stream's tail as providers send it: text deltas, then tool-call pieces and usage as raw events.
  const raw = (args: string) => ({
    choices: [{ delta: { tool_calls: [{ function: { arguments: args }, index: 0 }] }, index: 0 }],
    created: 1796690410,
    id: 'chatcmpl-jbx154',
    model: 'gpt-4o-mini',
    object: 'chat.completion.chunk',
  });
  const STREAM = [
    ...Array.from({ length: 12 }, (_, i) => [i, i, 'sixteen bytes ok']),
    [12, 13, null, raw('{"topic":')],
    [13, 13, null, raw('"refunds"}')],
  ];

  it('stores the entries as a blob the blob layer compresses, and reads back the same entries', async () => {
    const bytes = await makeTape(async (w) => {
      expect(w.version).toBe(3);
      const payload = await packChunks(STREAM, {
        blob: (b) => w.putBlob(b, { step: 0 }),
        value: (v) => w.putValue(v, { step: 0 }),
      });
      await w.append({ kind: 'llm.chunk', step: 0, payload });
    });
    const tape = readTape(bytes);
    const frame = tape.frames.find((f) => f.kind === 'llm.chunk')!;
    const p = frame.payload as { chunks: unknown; text: unknown };
    expect(p.chunks).toBeInstanceOf(BlobRef);
    expect(p.text).toBeInstanceOf(BlobRef);
    expect([...frame.refs].sort()).toEqual([(p.text as BlobRef).hash, (p.chunks as BlobRef).hash].sort());
    const entriesBlob = tape.frames.find((f) => f.blobKey === (p.chunks as BlobRef).hash)!;
    expect(entriesBlob.compressed).toBe(true);
    expect(chunkEntries(frame.payload, tape.blobs)).toEqual(STREAM);
  });

  it('keeps fewer entries inline, and keeps them inline for a tape of format 2 (no value store)', async () => {
    const few = STREAM.slice(0, ENTRIES_BLOB_MIN - 1);
    let values = 0;
    const put = async () => new BlobRef(new Uint8Array(32));
    const value = async () => {
      values++;
      return new BlobRef(new Uint8Array(32));
    };
    expect(Array.isArray((await packChunks(few, { blob: put, value })).chunks)).toBe(true);
    expect(values).toBe(0);
    expect(Array.isArray((await packChunks(STREAM, { blob: put })).chunks)).toBe(true);
    expect((await packChunks(STREAM, { blob: put, value })).chunks).toBeInstanceOf(BlobRef);
    expect(values).toBe(1);
  });
});
