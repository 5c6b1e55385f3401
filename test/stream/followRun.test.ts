import { statSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tapeFileName } from '../../src/recorder/naming';
import { FolderTapeStore } from '../../src/recorder/store';
import { type TapeHeader, TapeWriter } from '../../src/recorder/tape';
import { FollowOptionsError, followRun, type RunItem, RunTapeNotFoundError } from '../../src/stream';
import { tempDir } from '../recorder/tape/helpers';

const header = (workflowId: string, runId = 'run-1'): TapeHeader => ({
  tapeId: `${workflowId}/${runId}`,
  createdAtMs: Date.now(),
  workflowType: 'agentWorkflow',
  workflowId,
  runId,
  taskQueue: 'jukebox',
  agentCodeHash: `blake3:${'ab'.repeat(32)}`,
});

const ids = { activityId: '1', attempt: 1 };

async function chunk(w: TapeWriter, text: string) {
  await w.append({ kind: 'llm.chunk', step: 0, payload: { ...ids, chunks: [[0, 1, text]] } });
}

/** Items as they arrive, with a way to wait for the n-th. */
function tracked(iterable: AsyncIterable<RunItem>) {
  const items: RunItem[] = [];
  let wake: (() => void) | undefined;
  const done = (async () => {
    for await (const item of iterable) {
      items.push(item);
      wake?.();
    }
  })();
  return {
    items,
    done,
    async count(n: number) {
      while (items.length < n) await new Promise<void>((r) => (wake = r));
    },
  };
}

describe('followRun', () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  it('yields each frame as it is appended, and ends after the outcome when the tape is sealed', async () => {
    const w = await TapeWriter.open(path.join(t.dir, tapeFileName('wf-live', 'run-1')), header('wf-live'));
    await w.append({ kind: 'activity.start', step: 0, payload: { ...ids, activityType: 'llmStep' } });
    const f = tracked(followRun('wf-live', { tapesDir: t.dir }));
    await f.count(1);
    for (const [i, text] of ['Hel', 'lo', ' there'].entries()) {
      await chunk(w, text);
      // The follower has this token before the next one is written.
      await f.count(i + 2);
      expect(f.items.at(-1)).toMatchObject({ kind: 'token', text });
    }
    await w.seal({ status: 'completed', result: 'ok' });
    await f.done;
    expect(f.items.map((i) => [i.position, i.kind])).toEqual([
      [0, 'step'],
      [1, 'token'],
      [2, 'token'],
      [3, 'token'],
      [4, 'outcome'],
    ]);
    expect(f.items.at(-1)).toMatchObject({ status: 'completed', result: 'ok' });
  });

  it('resumes after a position with the next frame, and from a store given instead of a folder', async () => {
    const w = await TapeWriter.open(
      path.join(t.dir, tapeFileName('wf-resume', 'run-1')),
      header('wf-resume'),
    );
    for (const text of ['a', 'b', 'c', 'd']) await chunk(w, text);
    await w.seal({ status: 'completed' });
    const after: RunItem[] = [];
    const store = new FolderTapeStore({ dir: t.dir });
    for await (const item of followRun('wf-resume', { store, after: 1 })) after.push(item);
    expect(after.map((i) => i.position)).toEqual([2, 3, 4]);
    expect(after.map((i) => (i.kind === 'token' ? i.text : i.kind))).toEqual(['c', 'd', 'outcome']);
  });

  it('waits at a torn tail and reads on, once, when the next writer cuts it off and appends', async () => {
    const file = path.join(t.dir, tapeFileName('wf-torn', 'run-1'));
    const w = await TapeWriter.open(file, header('wf-torn'), { fsync: 'none' });
    await chunk(w, 'kept');
    const before = statSync(file).size;
    await chunk(w, 'x'.repeat(4000));
    await w.close();
    // A worker killed inside its write: the frame's head is on disk, most of its payload is not.
    truncateSync(file, before + 200);
    const f = tracked(followRun('wf-torn', { tapesDir: t.dir, pollMs: 20 }));
    await f.count(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(f.items.map((i) => (i.kind === 'token' ? i.text : i.kind))).toEqual(['kept']);
    const next = await TapeWriter.open(file, header('wf-torn'), { fsync: 'none' });
    await chunk(next, 'after the crash');
    await next.seal({ status: 'completed' });
    await f.done;
    expect(f.items.map((i) => [i.position, i.kind === 'token' ? i.text : i.kind])).toEqual([
      [0, 'kept'],
      [1, 'after the crash'],
      [2, 'outcome'],
    ]);
  });

  it('follows the workflow it is asked for when another id begins with it', async () => {
    const other = await TapeWriter.open(
      path.join(t.dir, tapeFileName('wf--b', 'run-9')),
      header('wf--b', 'run-9'),
    );
    await chunk(other, 'not mine');
    await other.seal({ status: 'completed' });
    const mine = await TapeWriter.open(path.join(t.dir, tapeFileName('wf', 'run-1')), header('wf'));
    await chunk(mine, 'mine');
    await mine.seal({ status: 'completed' });
    const items: RunItem[] = [];
    for await (const item of followRun('wf', { tapesDir: t.dir })) items.push(item);
    expect(items.map((i) => (i.kind === 'token' ? i.text : i.kind))).toEqual(['mine', 'outcome']);
  });

  it('ends without an error when its signal aborts while it waits', async () => {
    const w = await TapeWriter.open(path.join(t.dir, tapeFileName('wf-abort', 'run-1')), header('wf-abort'));
    await chunk(w, 'one');
    const stop = new AbortController();
    const f = tracked(followRun('wf-abort', { tapesDir: t.dir, signal: stop.signal }));
    await f.count(1);
    stop.abort();
    await f.done;
    expect(f.items).toHaveLength(1);
    await w.close();
  });

  it('refuses a tape that never appears, a position past the end, and a position that is not one', async () => {
    const missing = followRun('no-such-run', { tapesDir: t.dir, appearWithinMs: 150 });
    await expect(missing[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(RunTapeNotFoundError);
    await expect(missing[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: 'RUN_TAPE_NOT_FOUND',
    });

    const w = await TapeWriter.open(path.join(t.dir, tapeFileName('wf-end', 'run-1')), header('wf-end'));
    await chunk(w, 'only');
    await w.seal({ status: 'completed' });
    const past = followRun('wf-end', { tapesDir: t.dir, after: 5 });
    await expect(past[Symbol.asyncIterator]().next()).rejects.toThrow(
      /position 5 is past the end .* last item is at position 1/,
    );
    expect(() => followRun('wf-end', { tapesDir: t.dir, after: 1.5 })).toThrow(FollowOptionsError);
    expect(() => followRun('wf-end', { tapesDir: t.dir, after: -2 })).toThrow(/integer >= 0/);
  });
});
