import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { type ContentStore, FolderContentStore, splitJson } from '../../../src/recorder/content';
import { ContentDriver } from '../../../src/temporal/content/contentDriver';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const jsonPayload = (text: string): Payload => ({
  metadata: { encoding: encoder.encode('json/plain') },
  data: encoder.encode(text),
});
const result = (n: number) =>
  JSON.stringify({
    id: `chatcmpl-${n}`,
    text: `Step ${n}: ${'checking the knowledge base once more. '.repeat(12)}`,
    toolCalls: [{ id: `call_${n}`, name: 'lookup_fact', arguments: { topic: `step-${n}` } }],
    embedding: Array.from({ length: 96 }, (_, i) => (i * n) % 17),
  });

/** Counts the blobs each put hands the store. */
class CountingStore implements ContentStore {
  readonly written: string[] = [];
  constructor(readonly inner: ContentStore) {}
  get location() {
    return this.inner.location;
  }
  put(blobs: ReadonlyMap<string, Uint8Array>) {
    this.written.push(...blobs.keys());
    return this.inner.put(blobs);
  }
  get(hash: string) {
    return this.inner.get(hash);
  }
  close() {
    return this.inner.close();
  }
}

describe('the content driver', () => {
  it('a result stored while its prestore is under way waits for that put instead of writing again, and another host reads it back', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-driver-'));
    const store = new CountingStore(new FolderContentStore(dir));
    const driver = new ContentDriver(store);
    const text = result(7);
    driver.prestore(text);
    const [claim] = await driver.store({}, [jsonPayload(text)]);
    const blobs = splitJson(text)!.blobs;
    expect([...store.written].sort()).toEqual([...blobs.keys()].sort());
    expect(readdirSync(dir).sort()).toEqual([...blobs.keys()].sort());
    const elsewhere = new ContentDriver(new FolderContentStore(dir), { cacheBytes: 0 });
    const [back] = await elsewhere.retrieve({}, [claim!]);
    expect(decoder.decode(back!.data)).toBe(text);
  });

  it('answers a payload it stored from memory, and without its cache reads the store, which reports a lost blob', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-driver-'));
    const text = result(3);
    const cached = new ContentDriver(new FolderContentStore(dir, { cacheBytes: 0 }));
    const uncached = new ContentDriver(new FolderContentStore(dir, { cacheBytes: 0 }), { cacheBytes: 0 });
    const [claim] = await cached.store({}, [jsonPayload(text)]);
    await uncached.store({}, [jsonPayload(text)]);
    const root = claim!.claimData.hash!;
    rmSync(path.join(dir, root));
    const [fromMemory] = await cached.retrieve({}, [claim!]);
    expect(decoder.decode(fromMemory!.data)).toBe(text);
    await expect(uncached.retrieve({}, [claim!])).rejects.toMatchObject({
      code: 'CONTENT_MISSING',
      hash: root,
    });
  });
});
