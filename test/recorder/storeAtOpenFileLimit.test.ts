import { readdirSync, readlinkSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JukeboxError } from '../../src/errors';
import {
  RecorderTimings,
  type RunIdentity,
  TapeRecordError,
  type TapeSession,
  TapeStore,
} from '../../src/recorder';
import { readTape, TapeWriter, TapeWriterUnavailableError, verifyTape } from '../../src/recorder/tape';
import { activityInfo, RUN, recorder, recordLlmStep, response, tempDir } from './helpers';

const runNo = (i: number): RunIdentity => ({ ...RUN, workflowId: `wf-${i}`, runId: `run-${i}` });

const complete = (s: TapeSession, step: number, id = String(step)) =>
  s.append({
    kind: 'activity.complete',
    step,
    recordedAtUs: 1,
    payload: { workflowId: RUN.workflowId, runId: RUN.runId, activityId: id, attempt: 1, result: null },
  });

/** Descriptors this process holds on `.jbx` files right now. */
function openTapeFiles(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).endsWith('.jbx')) n++;
    } catch {
      // Closed between the listing and the readlink.
    }
  }
  return n;
}

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('the tape store at its open-file limit', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
    vi.restoreAllMocks();
  });
  const dir = () => {
    const t = tempDir('jbx-limit-');
    cleanups.push(t.cleanup);
    return t.dir;
  };

  it('records every step of many concurrent runs with two writers, never holding more tape files open', async () => {
    const rec = recorder(dir(), { maxOpenTapes: 2, fsync: 'step' });
    const runs = 24;
    const steps = 6;
    let peakFiles = 0;
    const sampler = setInterval(() => {
      peakFiles = Math.max(peakFiles, openTapeFiles());
    }, 2);
    const failures: unknown[] = [];
    await Promise.all(
      Array.from({ length: runs }, async (_, r) => {
        const run = runNo(r);
        for (let step = 0; step < steps; step++) {
          // The two flushes of a step with other runs' steps between them, as a model call would put there.
          const tape = rec.forActivity(activityInfo(`a${step}`, 1, 'llmStep', run), step);
          const request = {
            provider: 'openai' as const,
            model: 'gpt-4o-mini',
            messages: [{ role: 'user' as const, content: `run ${r} step ${step}` }],
          };
          tape.start({ step, request }, []);
          try {
            await tape.llmRequest(request);
            await tick();
            tape.llmChunk({ index: 0, offsetMs: 1, text: 'ok', raw: {} });
            tape.llmResponse(response('ok'));
            await tape.complete(response('ok'));
          } catch (err) {
            failures.push(err);
          }
        }
      }),
    );
    clearInterval(sampler);
    const pool = (rec.store as InstanceType<typeof TapeStore>).writers;
    await rec.close();
    expect(failures).toEqual([]);
    expect(pool.peakOpen).toBe(2);
    expect(peakFiles).toBeLessThanOrEqual(2);
    for (let r = 0; r < runs; r++) {
      const file = rec.store.pathFor(runNo(r).workflowId, runNo(r).runId);
      expect(verifyTape(file)).toMatchObject({ ok: true, tornTail: null });
      const kinds = readTape(file).frames.filter((f) => f.kind === 'activity.complete');
      expect(kinds).toHaveLength(steps);
    }
  });

  it('never closes a writer a caller is appending through: the next tape waits for it to be given back', async () => {
    const store = new TapeStore({ dir: dir(), fsync: 'none', maxOpenTapes: 1 });
    const order: string[] = [];
    let letGo!: () => void;
    const held = new Promise<void>((r) => {
      letGo = r;
    });
    const first = store.withTape(runNo(1), async (s) => {
      await complete(s, 0);
      order.push('run 1 appended');
      await held;
      await complete(s, 1);
      order.push('run 1 done');
    });
    const second = store.withTape(runNo(2), async (s) => {
      order.push('run 2 got its writer');
      await complete(s, 0);
    });
    await vi.waitFor(
      () => {
        expect(order).toEqual(['run 1 appended']);
        expect(store.writers.waiting).toBe(1);
      },
      { timeout: 20_000 },
    );
    letGo();
    await Promise.all([first, second]);
    expect(order).toEqual(['run 1 appended', 'run 1 done', 'run 2 got its writer']);
    await store.close();
    expect(verifyTape(store.pathFor('wf-1', 'run-1'))).toMatchObject({ ok: true });
    expect(readTape(store.pathFor('wf-1', 'run-1')).frames).toHaveLength(2);
  });

  it('continues an evicted tape from its parked state without reading it again', async () => {
    const store = new TapeStore({ dir: dir(), fsync: 'none', maxOpenTapes: 1 });
    const reopen = vi.spyOn(TapeWriter, 'reopen');
    for (let step = 0; step < 5; step++)
      for (const r of [1, 2, 3]) await store.withTape(runNo(r), (s) => complete(s, step));
    await store.close();
    // Every append after the first found its tape closed by another run's, and none read the tape back.
    expect(reopen).not.toHaveBeenCalled();
    for (const r of [1, 2, 3]) {
      const tape = readTape(store.pathFor(`wf-${r}`, `run-${r}`));
      expect(tape.frames.map((f) => f.step)).toEqual([0, 1, 2, 3, 4]);
    }
  });

  it('reads and verifies a tape again when another process appended since its writer closed', async () => {
    const d = dir();
    const a = new TapeStore({ dir: d, fsync: 'none', maxOpenTapes: 1 });
    const b = new TapeStore({ dir: d, fsync: 'none' });
    await a.withTape(RUN, (s) => complete(s, 0, 'a0'));
    await a.withTape(runNo(9), (s) => complete(s, 0)); // closes RUN's writer in a, parking its state
    await b.withTape(RUN, (s) => complete(s, 1, 'b1'));
    await b.close();
    const reopen = vi.spyOn(TapeWriter, 'reopen');
    await a.withTape(RUN, (s) => complete(s, 2, 'a2'));
    await a.close();
    expect(reopen).toHaveBeenCalledTimes(1);
    const file = a.pathFor(RUN.workflowId, RUN.runId);
    expect(verifyTape(file)).toMatchObject({ ok: true });
    expect(readTape(file).frames.map((f) => (f.payload as { activityId: string }).activityId)).toEqual([
      'a0',
      'b1',
      'a2',
    ]);
  });

  it("fsyncs a local step's frames before closing their writer for another tape, and its barrier waits for that", async () => {
    const timings = new RecorderTimings();
    const store = new TapeStore({ dir: dir(), fsync: 'step', maxOpenTapes: 1, timings });
    const synced: number[] = [];
    const original = TapeWriter.prototype.sync;
    vi.spyOn(TapeWriter.prototype, 'sync').mockImplementation(async function (this: TapeWriter) {
      await new Promise((r) => setTimeout(r, 100));
      await original.call(this);
      synced.push(this.byteLength);
    });
    await store.withTape(RUN, (s) => complete(s, 0), undefined, { deferSync: true });
    expect(synced).toEqual([]);
    // Another run needs the only writer: RUN's closes, fsyncing its local step first, while the barrier comes.
    const other = store.withTape(runNo(2), (s) => complete(s, 0), undefined, { deferSync: true });
    await tick();
    await store.barrier(RUN.workflowId, RUN.runId);
    expect(synced).toHaveLength(1);
    await other;
    await store.close();
    expect(timings.syncs).toBe(2);
  });

  it("closes a writer for another tape without an fsync of a step's request, which the step's closing fsync covers", async () => {
    const timings = new RecorderTimings();
    const store = new TapeStore({ dir: dir(), fsync: 'step', maxOpenTapes: 1, timings });
    const start = (s: TapeSession) =>
      s.append({
        kind: 'activity.start',
        step: 0,
        recordedAtUs: 1,
        payload: { activityId: '0', attempt: 1 },
      });
    // A step's first batch (before its I/O), then another run's step takes the only writer.
    await store.withTape(RUN, start);
    await store.withTape(runNo(2), start);
    expect(timings.syncs).toBe(0);
    // The first run's step closes through a new writer; its fsync is the step's only one.
    await store.withTape(RUN, (s) => complete(s, 0));
    expect(timings.syncs).toBe(1);
    await store.close();
    expect(timings.syncs).toBe(1);
    expect(readTape(store.pathFor(RUN.workflowId, RUN.runId)).frames.map((f) => f.kind)).toEqual([
      'activity.start',
      'activity.complete',
    ]);
  });

  it('fails a step whose write failed retryably, and the run goes on from the tape on disk', async () => {
    const rec = recorder(dir(), { maxOpenTapes: 1 });
    const request = { provider: 'openai' as const, model: 'gpt-4o-mini', messages: [] };
    await recordLlmStep(rec, 0, request, response('first'));
    // The disk refuses the step's first write: nothing of it reaches the file.
    const release = vi.spyOn(TapeWriter.prototype, 'release').mockImplementationOnce(function (
      this: TapeWriter,
    ) {
      (this as unknown as { held: unknown }).held = undefined;
      return Promise.reject(new TapeWriterUnavailableError('tape: a write failed', new Error('EIO')));
    });
    const failing = rec.forActivity(activityInfo('a1'), 1);
    failing.start({ step: 1, request }, []);
    const err = await failing.llmRequest(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TapeRecordError);
    expect((err as JukeboxError).nonRetryable).toBe(false);
    release.mockRestore();
    // Temporal's retry of the step: a new attempt, recorded through a writer the store opened afresh.
    const retry = rec.forActivity(activityInfo('a1', 2), 1);
    retry.start({ step: 1, request }, []);
    await retry.llmRequest(request);
    retry.llmResponse(response('second'));
    await retry.complete(response('second'));
    await rec.close();
    const file = rec.store.pathFor(RUN.workflowId, RUN.runId);
    expect(verifyTape(file)).toMatchObject({ ok: true, tornTail: null });
    const starts = readTape(file)
      .frames.filter((f) => f.kind === 'activity.start')
      .map((f) => f.payload as { activityId: string; attempt: number });
    expect(starts.map((f) => `${f.activityId}#${f.attempt}`)).toEqual(['a0#1', 'a1#2']);
  });

  it('still ends a step for good when the tape itself refuses it (sealed)', async () => {
    const rec = recorder(dir());
    await rec.recordOutcome(activityInfo('x'), { step: 0, status: 'completed' });
    const late = rec.forActivity(activityInfo('late'), 1);
    late.start({ step: 1 }, []);
    const err = await late.complete(null).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TapeRecordError);
    expect((err as JukeboxError).nonRetryable).toBe(true);
    await rec.close();
  });
});
