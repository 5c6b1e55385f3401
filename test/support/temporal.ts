import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type Worker } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../devserver/config';
import type { LlmEndpoints } from '../../llm';
import { createJukeboxWorker } from '../../runtime';
import type { ToolDefinition } from '../../tools';

const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
let bundle: ReturnType<typeof bundleWorkflowCode> | undefined;

/**
 * Connects to the suite's real dev server (started by test/globalSetup.ts) and runs an in-process worker on a
 * task queue of the test's own, for the whole file: runUntil would stop it after the first run.
 */
export async function connectTestWorker(options: { endpoints: LlmEndpoints; tools: ToolDefinition[] }) {
  const config = temporalConfigFromEnv();
  bundle ??= bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../../workflows/index.ts'),
    logger: quiet,
  });
  const env = await TestWorkflowEnvironment.createFromExistingServer({
    address: config.address,
    namespace: config.namespace,
  });
  const taskQueue = `test-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
  const worker: Worker = await createJukeboxWorker({
    connection: env.nativeConnection,
    namespace: config.namespace,
    taskQueue,
    endpoints: options.endpoints,
    tools: options.tools,
    workflowBundle: await bundle,
  });
  const running = worker.run();
  return {
    worker,
    connection: env.connection as Connection,
    namespace: config.namespace,
    taskQueue,
    async close() {
      worker.shutdown();
      await running;
      await env.teardown();
    },
  };
}
