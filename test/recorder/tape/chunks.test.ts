import { describe, expect, it } from 'vitest';
import { BlobRef, chunkEntries, packChunks, readTape } from '../../../src/recorder/tape';
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
    const packed = await packChunks(ENTRIES, async (bytes) => {
      stored = bytes;
      return new BlobRef(new Uint8Array(32));
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
      const payload = await packChunks(ENTRIES, (b) => w.putBlob(b, { step: 0 }));
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
    const packed = await packChunks(entries, async () => {
      puts++;
      return new BlobRef(new Uint8Array(32));
    });
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
