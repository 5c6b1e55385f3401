import { statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RecorderTimings, type TapeSession, TapeStore } from '../../src/recorder';
import { readTape, TapeWriter, verifyTape } from '../../src/recorder/tape';
import { RUN, tempDir } from './helpers';

/** One step's closing frame, as the recorder writes it: the kind the 'step' policy makes durable. */
const complete = (s: TapeSession, step: number) =>
  s.append({
    kind: 'activity.complete',
    step,
    recordedAtUs: 1,
    payload: {
      workflowId: RUN.workflowId,
      runId: RUN.runId,
      activityId: String(step),
      attempt: 1,
      result: null,
    },
  });

/**
 * Every fsync of a tape writer: the file length when it started, and whether it finished. `slowMs` stretches
 * each one like a slow disk would, so appends of other steps land while it runs.
 */
function watchSyncs(slowMs = 0) {
  const syncs: { from: number; done: boolean }[] = [];
  const original = TapeWriter.prototype.sync;
  const spy = vi.spyOn(TapeWriter.prototype, 'sync').mockImplementation(async function (this: TapeWriter) {
    const entry = { from: this.byteLength, done: false };
    syncs.push(entry);
    await new Promise((r) => setTimeout(r, slowMs));
    await original.call(this);
    entry.done = true;
  });
  return { syncs, restore: () => spy.mockRestore() };
}

describe('the tape store batches fsyncs without telling anyone "durable" early', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
    vi.restoreAllMocks();
  });

  const store = (options: ConstructorParameters<typeof TapeStore>[0] = {}) => {
    const t = tempDir('jbx-fsync-');
    cleanups.push(t.cleanup);
    const timings = new RecorderTimings();
    return { timings, store: new TapeStore({ dir: t.dir, fsync: 'step', timings, ...options }), dir: t.dir };
  };

  it('steps that finish together share fsyncs, and each resolves only after one that covers its frame', async () => {
    const { store: s, timings } = store();
    const watch = watchSyncs(30);
    const resolved: { length: number; syncsDone: { from: number; done: boolean }[] }[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, step) =>
        (async () => {
          let length = 0;
          await s.withTape(RUN, async (session) => {
            await complete(session, step);
            length = session.writer.byteLength;
          });
          resolved.push({ length, syncsDone: watch.syncs.filter((x) => x.done).map((x) => ({ ...x })) });
        })(),
      ),
    );
    await s.close();
    // Fewer fsyncs than steps: the ones that appended while an fsync ran shared the next one.
    expect(timings.syncs).toBeGreaterThanOrEqual(1);
    expect(timings.syncs).toBeLessThan(6);
    // Every step saw a finished fsync that started after its frame was in the file.
    for (const r of resolved) expect(r.syncsDone.some((x) => x.from >= r.length)).toBe(true);
    expect(verifyTape(s.pathFor(RUN.workflowId, RUN.runId))).toMatchObject({ ok: true });
  });

  it("holds local steps' frames for their workflow task's barrier, which fsyncs them all at once", async () => {
    const { store: s, timings } = store();
    for (let step = 0; step < 3; step++)
      await s.withTape(RUN, (session) => complete(session, step), undefined, { deferSync: true });
    // Written (another reader sees them) but not fsynced yet.
    expect(readTape(s.pathFor(RUN.workflowId, RUN.runId)).frames.map((f) => f.step)).toEqual([0, 1, 2]);
    expect(timings.syncs).toBe(0);
    await s.barrier(RUN.workflowId, RUN.runId);
    expect(timings).toMatchObject({ syncs: 1, barriers: 1 });
    // Nothing left to make durable: a second barrier is free.
    await s.barrier(RUN.workflowId, RUN.runId);
    expect(timings).toMatchObject({ syncs: 1, barriers: 1 });
    await s.close();
  });

  it('makes held local frames durable within the time limit when no barrier comes', async () => {
    const { store: s, timings } = store({ localSyncWithinMs: 50 });
    await s.withTape(RUN, (session) => complete(session, 0), undefined, { deferSync: true });
    expect(timings.syncs).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(timings.syncs).toBe(1);
    await s.close();
  });

  it('fsyncs held local frames before it closes their writer', async () => {
    const { store: s, timings } = store();
    await s.withTape(RUN, (session) => complete(session, 0), undefined, { deferSync: true });
    await s.close();
    expect(timings.syncs).toBe(1);
  });

  it('an ordinary step after local ones fsyncs them along with its own frame', async () => {
    const { store: s, timings } = store();
    await s.withTape(RUN, (session) => complete(session, 0), undefined, { deferSync: true });
    await s.withTape(RUN, (session) => complete(session, 1));
    expect(timings.syncs).toBe(1);
    // The barrier that follows finds nothing to do.
    await s.barrier(RUN.workflowId, RUN.runId);
    expect(timings).toMatchObject({ syncs: 1, barriers: 0 });
    await s.close();
  });
});

describe('a tape writer holding frames', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  const open = async () => {
    const t = tempDir('jbx-hold-');
    cleanups.push(t.cleanup);
    const file = path.join(t.dir, 'held.jbx');
    const w = await TapeWriter.open(
      file,
      {
        tapeId: 'held/1',
        createdAtMs: 1,
        workflowType: 'agent',
        workflowId: 'held',
        runId: '1',
        taskQueue: 'q',
        agentCodeHash: 'unknown',
      },
      { fsync: 'none' },
    );
    return { w, file };
  };

  it('puts nothing on the file before release, then everything in order', async () => {
    const { w, file } = await open();
    const empty = statSync(file).size;
    w.hold();
    const ref = await w.putValue({ big: 'x'.repeat(500) }, { step: 0 });
    await w.append({ kind: 'clock', step: 0, recordedAtUs: 1, payload: { seq: 0, nowMs: 5, ref } });
    expect(statSync(file).size).toBe(empty);
    await w.release();
    expect(statSync(file).size).toBe(w.byteLength);
    await w.close();
    expect(readTape(file).frames.map((f) => f.kind)).toEqual(['blob', 'clock']);
  });

  it('writes what it holds ahead of a seal, so the sealed tape has every frame', async () => {
    const { w, file } = await open();
    w.hold();
    await w.append({ kind: 'clock', step: 0, recordedAtUs: 1, payload: { seq: 0, nowMs: 5 } });
    await w.seal({ status: 'completed' });
    await w.close();
    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
    expect(readTape(file).frames.map((f) => f.kind)).toEqual(['clock', 'outcome', 'seal']);
  });
});
