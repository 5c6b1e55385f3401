import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepScript } from '../../../examples/sample/stepScript';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { completedActivities, waitUntil } from '../../support/history';
import { startResearchRun } from '../../support/researchRun';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';

const STEPS = 6;

describe('a run survives SIGKILLed workers', () => {
  let model: ModelServer;
  let connection: Connection;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    // ~20 chunks of 25 ms: each model step streams for about half a second, long enough to be killed mid-stream.
    model = await startModelServer({ script: stepScript(STEPS, { chunkDelayMs: 25, chunkSize: 4 }) });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });

  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
  });

  it('completes after kills at step boundaries and mid-stream, re-running only unfinished steps', async () => {
    const { namespace } = temporalConfigFromEnv();
    const taskQueue = `crash-${Date.now()}`;
    const env = { JUKEBOX_TASK_QUEUE: taskQueue, JUKEBOX_MODEL_URL: model.url };
    const start = async () => {
      const w = await spawnWorker(env);
      workers.push(w);
      return w;
    };

    let worker = await start();
    const handle = await startResearchRun({ connection, namespace, taskQueue, steps: STEPS });

    // Requests that were in flight when a worker died: each is legitimately sent again by the retry.
    let interrupted = 0;
    const killNow = async () => {
      await worker.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 300));
      const finishedLlmSteps = await completedActivities(handle, 'llmStep');
      const inFlight = model.requestCount() - finishedLlmSteps - interrupted;
      expect(inFlight).toBeGreaterThanOrEqual(0);
      interrupted += inFlight;
      return inFlight;
    };

    // 1. At a step boundary: after the first model step and its tool step completed.
    await waitUntil('two steps completed', async () => (await completedActivities(handle)) >= 2);
    await killNow();
    worker = await start();

    // 2. In the middle of a streaming model step.
    const before = model.requestCount();
    await waitUntil('a new model request started', () => model.requestCount() > before);
    await new Promise((r) => setTimeout(r, 150));
    expect(await killNow()).toBe(1);
    worker = await start();

    // 3. At a later step boundary.
    await waitUntil('eight steps completed', async () => (await completedActivities(handle)) >= 8);
    await killNow();
    worker = await start();

    const result = await handle.result();
    expect(result.output.answer).toBe(`Done after ${STEPS} lookups.`);
    expect(result.steps.filter((s) => s.kind === 'llm')).toHaveLength(STEPS + 1);
    // Every finished model step was served exactly once; only the interrupted ones were asked again.
    expect(model.requestCount()).toBe(STEPS + 1 + interrupted);
    const served = model.servedTurns().map((t) => t.turnId);
    const repeated = served.filter((id, i) => served.indexOf(id) !== i);
    expect(repeated.length).toBe(interrupted);
  });
});
