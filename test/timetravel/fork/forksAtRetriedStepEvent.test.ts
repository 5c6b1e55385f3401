import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepScript } from '../../../examples/sample/stepScript';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { TapeStore } from '../../../src/recorder';
import { captureRunHistory } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import type { StepEvents } from '../../../src/timetravel/fork';
import { readTimeline } from '../../../src/timetravel/replay';
import { tempDir } from '../../recorder/helpers';
import { completedActivities, waitUntil } from '../../support/history';
import { startResearchRun } from '../../support/researchRun';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';
import { runJbx } from '../replay/jbx';

const STEPS = 3;

describe('forking at a history event of a run whose worker was killed mid-step', () => {
  let model: ModelServer;
  let connection: Connection;
  const workers: WorkerProcess[] = [];
  const tmp = tempDir('jbx-fork-retry-');

  beforeAll(async () => {
    // Slow chunks keep each model step in flight long enough to kill the worker inside one.
    model = await startModelServer({ script: stepScript(STEPS, { chunkDelayMs: 120 }) });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
    tmp.cleanup();
  });

  it('maps the retry attempt’s events to the step it retried, and forks there', async () => {
    const taskQueue = `fork-retry-${Date.now()}`;
    const env = { JUKEBOX_TASK_QUEUE: taskQueue, JUKEBOX_MODEL_URL: model.url, JUKEBOX_TAPE_DIR: tmp.dir };
    const first = await spawnWorker(env);
    workers.push(first);
    const { namespace } = temporalConfigFromEnv();
    const handle = await startResearchRun({ connection, namespace, taskQueue, steps: STEPS });
    await waitUntil('a model step in flight after two finished activities', async () => {
      if ((await completedActivities(handle)) < 2) return false;
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      return pending.some((p) => p.activityType?.name === 'llmStep' && Number(p.state) === 2);
    });
    await first.kill('SIGKILL');
    const second = await spawnWorker(env);
    workers.push(second);
    const result = await handle.result();
    expect(result.output.answer).toBe(`Done after ${STEPS} lookups.`);
    const runId = (await handle.describe()).runId;
    const tape = new TapeStore({ dir: tmp.dir }).pathFor(handle.workflowId, runId);
    await captureRunHistory(handle, tmp.dir);

    const jbx = (...args: string[]) => runJbx(args, { env });
    const shown = await jbx('show', tape, '--events', '--json');
    expect(shown.code, shown.stderr).toBe(0);
    const steps = (JSON.parse(shown.stdout) as { steps: StepEvents[] }).steps;
    const retried = steps.find((s) =>
      s.events.some((e) => e.type === 'ActivityTaskStarted' && e.attempt! >= 2),
    );
    expect(retried, JSON.stringify(steps)).toBeDefined();
    expect(retried!.kind).toBe('llm');
    // The tape holds both attempts of that step (the killed one and its retry); the history holds the retry's.
    const t = readTimeline(tape);
    expect(t.steps[retried!.step]!.attempts).toBeGreaterThanOrEqual(2);
    const retryStarted = retried!.events.find((e) => e.type === 'ActivityTaskStarted')!;

    model.loadScript(stepScript(STEPS, { chunkDelayMs: 0 }));
    const forked = await jbx(
      'fork',
      '--workflow-id',
      handle.workflowId,
      '--run-id',
      runId,
      '--event',
      String(retryStarted.id),
      '--skip-code-check',
      '--json',
    );
    expect(forked.code, forked.stderr).toBe(0);
    expect(forked.stderr).toContain(
      `event ${retryStarted.id} (ActivityTaskStarted) is inside step ${retried!.step} (events ${retried!.first}..${retried!.last})`,
    );
    const out = JSON.parse(forked.stdout);
    expect(out).toMatchObject({ status: 'completed', fork: { forkStep: retried!.step } });
    expect(out.output.answer).toBe(`Done after ${STEPS} lookups.`);
    const fork = readTimeline(out.tape);
    expect(fork.tape.header.parent?.forkStep).toBe(retried!.step);
    // Every step before the retried one came from the parent tape, not from a model call.
    for (const s of fork.steps.slice(0, retried!.step)) expect(s.activityId).toMatch(/^inherited-/);
    const client = new Client({ connection, namespace });
    const memo = (await client.workflow.getHandle(out.workflowId).describe()).memo as Record<string, unknown>;
    expect(memo.jukeboxParent).toMatchObject({
      workflowId: handle.workflowId,
      runId,
      forkStep: retried!.step,
    });
  });
});
