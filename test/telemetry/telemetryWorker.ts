import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { researchTools } from '../../examples/sample/tools';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { localEndpoints } from '../../src/llm';
import type { JukeboxTelemetryOptions } from '../../src/telemetry';
import { bundleTracedWorkflows, createJukeboxWorker, startAgent } from '../../src/temporal';

export const TELEMETRY_WORKFLOWS = path.join(__dirname, 'fixtures/workflows.ts');
let bundle: ReturnType<typeof bundleTracedWorkflows> | undefined;

/** A real worker on the suite's dev server with telemetry on, recording tapes into a fresh folder. */
export async function startTelemetryWorker(modelUrl: string, telemetry: JukeboxTelemetryOptions) {
  bundle ??= bundleTracedWorkflows(TELEMETRY_WORKFLOWS);
  const config = temporalConfigFromEnv();
  const env = await TestWorkflowEnvironment.createFromExistingServer({
    address: config.address,
    namespace: config.namespace,
  });
  const taskQueue = `telemetry-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
  const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-telemetry-tapes-'));
  const worker = await createJukeboxWorker({
    connection: env.nativeConnection,
    namespace: config.namespace,
    taskQueue,
    endpoints: localEndpoints(modelUrl),
    tools: researchTools,
    workflowBundle: await bundle,
    tape: { dir: tapeDir },
    telemetry,
  });
  const running = worker.run();
  return {
    tapeDir,
    async run<O>(input: Record<string, unknown>) {
      const handle = await startAgent<Record<string, unknown>, O>('researchAgent', input, {
        connection: env.connection as Connection,
        namespace: config.namespace,
        taskQueue,
      });
      const result = await handle.result();
      const runId = (await handle.describe()).runId;
      return { result, workflowId: handle.workflowId, runId };
    },
    async close() {
      worker.shutdown();
      await running;
      await env.teardown();
    },
  };
}
