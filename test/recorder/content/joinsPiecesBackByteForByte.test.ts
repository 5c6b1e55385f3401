import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ContentDamagedError,
  ContentMissingError,
  contentHash,
  FolderContentStore,
  joinJson,
  splitJson,
} from '../../../src/recorder/content';

const join = (root: string, blobs: Map<string, Uint8Array>) =>
  joinJson(
    root,
    async (h) => {
      const b = blobs.get(h);
      if (!b) throw new ContentMissingError(h, 'memory');
      return b;
    },
    'memory',
    { maxChars: 1 << 30 },
  );

const conversation = (n: number) => ({
  step: n,
  request: {
    provider: 'openai',
    model: 'gpt-4o-mini',
    messages: Array.from({ length: n }, (_, i) =>
      i % 2
        ? { role: 'tool', toolCallId: `call_${i}`, name: 'page', content: `page ${i} ${'x'.repeat(8192)}` }
        : {
            role: 'assistant',
            content: `Step ${i}: reading on.`,
            toolCalls: [{ id: `call_${i + 1}`, name: 'page', arguments: { n: i } }],
          },
    ),
    tools: [
      {
        name: 'page',
        description: 'A page of text.',
        parameters: { type: 'object', properties: { n: { type: 'number' } } },
      },
    ],
  },
});

describe('a JSON payload cut into content-addressed pieces', () => {
  it('joins back to the same text for any JSON value', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue(),
        fc.integer({ min: 2, max: 40 }),
        fc.integer({ min: 2, max: 5 }),
        async (v, min, group) => {
          const text = JSON.stringify(v);
          const split = splitJson(text, { minBlobChars: min, groupSize: group });
          expect(split).toBeDefined();
          expect(await join(split!.root, split!.blobs)).toBe(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('stores a resent conversation once: the next step adds its new message, its last group and a root', () => {
    const a = splitJson(JSON.stringify(conversation(200)))!;
    const b = splitJson(JSON.stringify(conversation(201)))!;
    const added = [...b.blobs.keys()].filter((h) => !a.blobs.has(h));
    const addedBytes = added.reduce((n, h) => n + b.blobs.get(h)!.byteLength, 0);
    // Message 200 is an assistant message (inline in the last group); the 100 pages are not stored again.
    expect(added.length).toBeLessThanOrEqual(4);
    expect(addedBytes).toBeLessThan(16 * 1024);
    const total = [...b.blobs.values()].reduce((n, x) => n + x.byteLength, 0);
    expect(total).toBeLessThan(JSON.stringify(conversation(201)).length * 1.1);
  });

  it('stores the same long string once wherever it appears', () => {
    const page = `page ${'y'.repeat(10_000)}`;
    const result = splitJson(JSON.stringify(page))!;
    const request = splitJson(JSON.stringify({ messages: [{ role: 'tool', content: page }] }))!;
    expect(request.blobs.has(result.root)).toBe(true);
  });

  it('leaves alone a text it could not give back faithfully', () => {
    expect(splitJson('{ "a": 1 }')).toBeUndefined(); // spaces: JSON.stringify would write it without
    expect(splitJson('not json')).toBeUndefined();
    expect(splitJson(JSON.stringify({ '\u0000': 'a'.repeat(64) }))).toBeUndefined();
  });

  it('names the blob that is missing or damaged, and never expands without end', async () => {
    const s = splitJson(JSON.stringify(conversation(10)), { minBlobChars: 64 })!;
    const [victim] = [...s.blobs.keys()].filter((h) => h !== s.root);
    const missing = new Map(s.blobs);
    missing.delete(victim!);
    await expect(join(s.root, missing)).rejects.toMatchObject({ code: 'CONTENT_MISSING', hash: victim });
    await expect(
      joinJson(s.root, async (h) => s.blobs.get(h)!, 'memory', { maxChars: 100 }),
    ).rejects.toBeInstanceOf(ContentDamagedError);
  });
});

describe('the folder content store', () => {
  it('keeps blobs by hash, checks them on read, and reports a missing or damaged one by name', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-content-'));
    const s = splitJson(JSON.stringify(conversation(6)), { minBlobChars: 64 })!;
    await new FolderContentStore(dir).put(s.blobs);
    expect(readdirSync(dir).sort()).toEqual([...s.blobs.keys()].sort());
    const fresh = new FolderContentStore(dir);
    expect(await joinJson(s.root, (h) => fresh.get(h), dir, { maxChars: 1 << 24 })).toBe(
      JSON.stringify(conversation(6)),
    );
    writeFileSync(path.join(dir, s.root), 'tampered');
    await expect(new FolderContentStore(dir).get(s.root)).rejects.toMatchObject({
      code: 'CONTENT_DAMAGED',
      hash: s.root,
    });
    await expect(new FolderContentStore(dir).get('0'.repeat(64))).rejects.toMatchObject({
      code: 'CONTENT_MISSING',
      hash: '0'.repeat(64),
    });
  });

  it('rewrites a blob whose name holds other bytes of the same size, as a crash before its fsync can leave', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-content-'));
    const bytes = Buffer.from('{"role":"tool","content":"page 1"}');
    const hash = contentHash(bytes);
    writeFileSync(path.join(dir, hash), Buffer.alloc(bytes.byteLength));
    await new FolderContentStore(dir).put(new Map([[hash, bytes]]));
    expect(readFileSync(path.join(dir, hash))).toEqual(bytes);
    expect(readdirSync(dir)).toEqual([hash]);
  });

  it('keeps a blob another process put as it is, and writes a large one whole', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-content-'));
    const small = Buffer.from('"a blob both processes put"');
    const large = Buffer.alloc(3 * 1024 * 1024 + 5, 'y');
    const blobs = new Map([
      [contentHash(small), small],
      [contentHash(large), large],
    ]);
    await new FolderContentStore(dir).put(new Map([[contentHash(small), small]]));
    const inode = statSync(path.join(dir, contentHash(small))).ino;
    await new FolderContentStore(dir, { durable: false }).put(blobs);
    expect(statSync(path.join(dir, contentHash(small))).ino).toBe(inode);
    // Compared as bytes: a deep equality over 3 MB element by element takes seconds.
    expect(readFileSync(path.join(dir, contentHash(large))).equals(large)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual([...blobs.keys()].sort());
  });
});
