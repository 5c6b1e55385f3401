import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../../examples/sample/agent';
import { stepScript } from '../../../examples/sample/stepScript';
import { type DevServerHandle, freePort, startDevServer } from '../../../servers/devserver';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { completedActivities, waitUntil } from '../../support/history';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';

const STEPS = 5;

describe('a run survives a SIGKILLed Temporal server', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  it('resumes and completes after the dev server is killed and restarted on the same SQLite file', async () => {
    // A server of this test's own: killing the suite's shared one would break every other test file.
    const port = await freePort();
    const dbFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'jukebox-server-crash-')), 'temporal.sqlite');
    const serverOptions = { port, dbFile, headless: true, namespace: 'jukebox' };
    let server: DevServerHandle = await startDevServer(serverOptions);
    cleanup.push(() => server.stop());
    const address = server.address;

    const model: ModelServer = await startModelServer({
      script: stepScript(STEPS, { chunkDelayMs: 20, chunkSize: 8 }),
    });
    cleanup.push(() => model.close());
    const taskQueue = `server-crash-${Date.now()}`;
    const worker: WorkerProcess = await spawnWorker({
      JUKEBOX_TEMPORAL_ADDRESS: address,
      JUKEBOX_TASK_QUEUE: taskQueue,
      JUKEBOX_MODEL_URL: model.url,
    });
    cleanup.push(() => worker.kill());

    let connection = await Connection.connect({ address });
    const handle = await startAgent<Record<string, unknown>, ResearchOutput>(
      'researchAgent',
      { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 },
      {
        connection,
        namespace: 'jukebox',
        taskQueue,
        runOptions: { heartbeatTimeoutMs: 2_000, initialRetryIntervalMs: 100 },
      },
    );
    await waitUntil('four steps completed', async () => (await completedActivities(handle)) >= 4);
    const finishedBeforeKill = await completedActivities(handle, 'llmStep');
    await server.kill('SIGKILL');
    await connection.close();

    server = await startDevServer(serverOptions);
    expect(server.reused).toBe(false);
    connection = await Connection.connect({ address });
    const again = new Client({ connection, namespace: 'jukebox' }).workflow.getHandle(handle.workflowId);
    const result = (await again.result()) as { output: ResearchOutput; steps: unknown[] };
    await connection.close();

    expect(result.output.answer).toBe(`Done after ${STEPS} lookups.`);
    // Every model step reached the model once, in order, except that the one in flight when the server died
    // may have reached it once more (its result was lost with the server, so Temporal retried it): steps the
    // server had recorded as finished never again, and no later step twice.
    const served = model.servedTurns().map((t) => t.turnId);
    expect(finishedBeforeKill).toBeGreaterThanOrEqual(2);
    const turns = [...Array.from({ length: STEPS }, (_, i) => `turn-${i}`), 'answer'];
    const allowed = [
      turns,
      ...turns
        .map((id, k) => [...turns.slice(0, k + 1), id, ...turns.slice(k + 1)])
        .slice(finishedBeforeKill),
    ];
    expect(allowed).toContainEqual(served);
    expect(model.requestCount()).toBe(served.length);
  });
});
