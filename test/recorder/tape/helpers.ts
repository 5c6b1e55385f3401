import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TapeHeader, TapeWriter, type WriterOptions } from '../../../src/recorder/tape';
import type { FormatVersion } from '../../../src/recorder/tape/header';

export const HEADER: TapeHeader = {
  tapeId: 'tape-1',
  createdAtMs: 1_700_000_000_000,
  workflowType: 'agentWorkflow',
  workflowId: 'wf-1',
  runId: 'run-1',
  taskQueue: 'jukebox',
  agentCodeHash: `blake3:${'ab'.repeat(32)}`,
};

export function tempDir(): { dir: string; path: (name: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'jbx-test-'));
  return { dir, path: (n) => join(dir, n), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

let clock = 1_700_000_000_000_000;
export const fakeClock = (): number => clock++;

/** Writes a tape with `build` and returns its bytes. */
export async function makeTape(
  build: (w: TapeWriter) => Promise<void>,
  header: TapeHeader = HEADER,
  options: WriterOptions = { fsync: 'none', nowUs: fakeClock },
): Promise<Uint8Array> {
  const t = tempDir();
  try {
    const p = t.path('t.jbx');
    const w = await TapeWriter.open(p, header, options);
    await build(w);
    await w.close();
    return new Uint8Array(readFileSync(p));
  } finally {
    t.cleanup();
  }
}

/** A small but representative tape: blobs, refs, identity fields, several kinds, sealed. */
export async function sampleTape(seal = true, formatVersion?: FormatVersion): Promise<Uint8Array> {
  return makeTape(
    async (w) => {
      const sys = await w.putValue({ role: 'system', content: 'be brief' }, { step: 0 });
      const u = await w.putValue({ role: 'user', content: 'hello' }, { step: 0 });
      await w.append({
        kind: 'llm.request',
        step: 0,
        payload: { model: 'm', messages: [sys, u], workflowId: 'wf-1' },
      });
      await w.append({ kind: 'llm.chunk', step: 0, payload: { seq: 0, delta: 'hi' } });
      await w.append({ kind: 'llm.response', step: 0, payload: { text: 'hi', usage: { in: 3, out: 1 } } });
      await w.append({
        kind: 'activity.start',
        step: 1,
        payload: { activityId: '1', attempt: 1, activityType: 'tool' },
      });
      await w.append({ kind: 'random', step: 1, payload: { values: [0.25, 7] } });
      await w.append({
        kind: 'activity.complete',
        step: 1,
        payload: { activityId: '1', attempt: 1, result: null },
      });
      if (seal) await w.seal({ status: 'completed', result: 'ok' });
    },
    HEADER,
    { fsync: 'none', nowUs: fakeClock, formatVersion },
  );
}

/** Frame boundaries of a well-formed tape: [offset, end) per frame, plus where frames start. */
export function frameBounds(bytes: Uint8Array): { headerEnd: number; frames: Array<[number, number]> } {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerEnd = 16 + v.getUint32(12, true) + 32;
  const frames: Array<[number, number]> = [];
  let o = headerEnd;
  while (o < bytes.byteLength) {
    const len = v.getUint32(o, true);
    frames.push([o, o + len]);
    o += len;
  }
  return { headerEnd, frames };
}
