import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectServerHandle } from '../../servers/objectserver';
import {
  type ObjectBucket,
  ObjectTapeStore,
  type RunIdentity,
  segmentKey,
  TapeSegmentsError,
} from '../../src/recorder';
import { readTape, verifyTape } from '../../src/recorder/tape';
import { objectServer, uniquePrefix } from '../support/objectServer';

const run = (id: string): RunIdentity => ({
  workflowId: `wf-${id}`,
  runId: 'run-1',
  workflowType: 'researchAgent',
  taskQueue: 'q',
  agentCodeHash: 'blake3:test',
});

describe('the object tape store on a real S3-compatible server', () => {
  let server: ObjectServerHandle;
  let bucket: ObjectBucket;
  const prefix = uniquePrefix('chains');
  const stores: ObjectTapeStore[] = [];
  // Each store stands for a host: its own client and its own local copies, nothing shared but the bucket.
  const host = async () => {
    const s = new ObjectTapeStore({
      bucket: await server.bucket(),
      prefix,
      cacheDir: mkdtempSync(path.join(os.tmpdir(), 'jbx-host-')),
    });
    stores.push(s);
    return s;
  };

  beforeAll(async () => {
    server = await objectServer();
    bucket = await server.bucket();
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    bucket?.destroy();
  });

  it('interleaves concurrent appends of two hosts into one tape with one chain, losing none', async () => {
    const [a, b] = [await host(), await host()];
    const r = run('race');
    const append = (s: ObjectTapeStore, who: string) =>
      (async () => {
        for (let i = 0; i < 25; i++)
          await s.withTape(r, (t) =>
            t.append({
              kind: 'tool.call',
              step: i,
              payload: { toolName: who, callId: `${who}-${i}`, args: {} },
            }),
          );
      })();
    await Promise.all([append(a, 'a'), append(b, 'b')]);
    await a.withTape(r, (t) => t.seal({ status: 'completed' }, 25));

    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'jbx-dl-')), 'race.jbx');
    const got = await (await host()).download(a.keyFor(r.workflowId, r.runId), file);
    expect(got.segments).toBeGreaterThanOrEqual(51);
    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true, frames: 52 });
    const calls = readTape(file).frames.filter((f) => f.kind === 'tool.call');
    const ids = calls.map((f) => (f.payload as { callId: string }).callId);
    expect(new Set(ids).size).toBe(50);
    // Each host's own frames stay in its order.
    for (const who of ['a', 'b']) {
      const mine = ids.filter((id) => id.startsWith(`${who}-`)).map((id) => Number(id.split('-')[1]));
      expect(mine).toEqual([...mine].sort((x, y) => x - y));
    }
  });

  it('lets a host that was behind see the seal another host wrote, instead of appending after it', async () => {
    const [a, b] = [await host(), await host()];
    const r = run('seal');
    await a.withTape(r, (t) => t.append({ kind: 'clock', step: 0, payload: { seq: 0, nowMs: 1 } }));
    await b.withTape(r, (t) => t.append({ kind: 'clock', step: 1, payload: { seq: 1, nowMs: 2 } }));
    await b.withTape(r, (t) => t.seal({ status: 'completed' }, 1));
    // a's copy still ends before b's frames: its append loses the race for that offset, reads on, finds the seal.
    const sealedSeen = await a.withTape(r, async (t) => t.sealed);
    expect(sealedSeen).toBe(true);
    await expect(a.list()).resolves.toContain(bucket.url(a.keyFor(r.workflowId, r.runId)));
  });

  it('refuses a tape whose segments leave a gap, naming the missing bytes, and repairs nothing', async () => {
    const a = await host();
    const r = run('gap');
    await a.withTape(r, (t) => t.append({ kind: 'clock', step: 0, payload: { seq: 0, nowMs: 1 } }));
    const key = a.keyFor(r.workflowId, r.runId);
    // A segment far past the end, as if the one between had been deleted.
    await bucket.putIfAbsent(segmentKey(key, 1_000_000), new Uint8Array([1, 2, 3]));
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'jbx-dl-')), 'gap.jbx');
    const err = await (await host()).download(key, file).catch((e) => e);
    expect(err).toBeInstanceOf(TapeSegmentsError);
    expect(err.message).toMatch(
      /are missing \(no segment starts at \d+; the next one, .*0000000001000000\.seg/,
    );
    const b = await host();
    await expect(
      b.withTape(r, (t) => t.append({ kind: 'clock', step: 1, payload: { seq: 1, nowMs: 2 } })),
    ).rejects.toBeInstanceOf(TapeSegmentsError);
  });
});
