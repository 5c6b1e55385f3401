import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../devserver/config';
import type { LlmEndpoints } from '../../llm';
import type { TapeRecorderOptions } from '../../recorder';
import { createJukeboxWorker } from '../../runtime';
import type { ToolDefinition } from '../../tools';

const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
let bundle: ReturnType<typeof bundleWorkflowCode> | undefined;

/**
 * Like test/support/temporal.ts (a worker running for the whole file on its own task queue), with the recorder
 * configured and the recorder tests' own workflows.
 */
export async function connectRecordingWorker(options: {
  endpoints: LlmEndpoints;
  tools: ToolDefinition[];
  tape: false | TapeRecorderOptions;
}) {
  const config = temporalConfigFromEnv();
  bundle ??= bundleWorkflowCode({
    workflowsPath: path.join(__dirname, 'fixtures/workflows.ts'),
    logger: quiet,
  });
  const env = await TestWorkflowEnvironment.createFromExistingServer({
    address: config.address,
    namespace: config.namespace,
  });
  const taskQueue = `rec-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
  const worker = await createJukeboxWorker({
    connection: env.nativeConnection,
    namespace: config.namespace,
    taskQueue,
    endpoints: options.endpoints,
    tools: options.tools,
    workflowBundle: await bundle,
    tape: options.tape,
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
