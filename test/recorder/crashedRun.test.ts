import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepScript } from '../../examples/sample/stepScript';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { TapeStore } from '../../src/recorder';
import { readTape, verifyTape } from '../../src/recorder/tape';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { completedActivities, waitUntil } from '../support/history';
import { startResearchRun } from '../support/researchRun';
import { spawnWorker, type WorkerProcess } from '../support/workerProcess';
import { tempDir } from './helpers';

const STEPS = 3;

describe('a run whose worker crashed', () => {
  let model: ModelServer;
  let connection: Connection;
  const workers: WorkerProcess[] = [];
  const tmp = tempDir();

  beforeAll(async () => {
    model = await startModelServer({ script: stepScript(STEPS, { chunkDelayMs: 5 }) });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
    tmp.cleanup();
  });

  it('leaves a tape that verifies up to the last finished step, which the next worker continues', async () => {
    const taskQueue = `rec-crash-${Date.now()}`;
    const env = { JUKEBOX_TASK_QUEUE: taskQueue, JUKEBOX_MODEL_URL: model.url, JUKEBOX_TAPE_DIR: tmp.dir };
    const first = await spawnWorker(env);
    workers.push(first);
    const handle = await startResearchRun({
      connection,
      namespace: temporalConfigFromEnv().namespace,
      taskQueue,
      steps: STEPS,
    });
    const file = new TapeStore({ dir: tmp.dir }).pathFor(handle.workflowId, (await handle.describe()).runId);

    await waitUntil('two steps completed', async () => (await completedActivities(handle)) >= 2);
    await first.kill('SIGKILL');

    const crashed = verifyTape(file);
    expect(crashed).toMatchObject({ ok: true, sealed: false });
    const partial = readTape(file);
    // The steps the first worker finished, in order from step 0: at least the two the history showed.
    const done = partial.frames.filter((f) => f.kind === 'activity.complete').map((f) => f.step);
    expect(done.length).toBeGreaterThanOrEqual(2);
    expect(done).toEqual(Array.from({ length: done.length }, (_, i) => i));
    expect(partial.frames.some((f) => f.kind === 'outcome')).toBe(false);

    const second = await spawnWorker(env);
    workers.push(second);
    const result = await handle.result();
    expect(result.output.answer).toBe(`Done after ${STEPS} lookups.`);

    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
    const tape = readTape(file);
    // The prefix the crash left is untouched: the second worker appended after it.
    expect(tape.frames.slice(0, partial.frames.length).map((f) => f.chain)).toEqual(
      partial.frames.map((f) => f.chain),
    );
    // The first worker started the early steps, the second every later one.
    const pids = tape.frames
      .filter((f) => f.kind === 'activity.start')
      .map((f) => (f.payload as { pid: number }).pid);
    const byFirst = pids.indexOf(second.child.pid!);
    expect(byFirst).toBeGreaterThanOrEqual(done.length);
    expect(pids).toEqual([
      ...Array<number>(byFirst).fill(first.child.pid!),
      ...Array<number>(pids.length - byFirst).fill(second.child.pid!),
    ]);
    // Every step completed once, in order: 3 model turns, 3 tool calls and the answer. The one exception is the
    // last step the first worker finished, whose completion the SIGKILL may have kept from the server: then
    // Temporal ran it again on the second worker, and the tape holds both.
    const completed = tape.frames.filter((f) => f.kind === 'activity.complete').map((f) => f.step);
    const all = Array.from({ length: 2 * STEPS + 1 }, (_, i) => i);
    const last = done.at(-1)!;
    expect([all, [...all.slice(0, last + 1), last, ...all.slice(last + 1)]]).toContainEqual(completed);
    expect((tape.outcome as { status: string }).status).toBe('completed');
  });
});
