import path from 'node:path';
import { Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, type Worker } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../devserver/config';
import type { LlmEndpoints } from '../../llm';
import { createJukeboxWorker } from '../../runtime';
import type { ToolDefinition } from '../../tools';

const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
let bundle: ReturnType<typeof bundleWorkflowCode> | undefined;

/** Connections to the suite's dev server plus a running in-process worker on a task queue of the test's own. */
export async function connectTestWorker(options: { endpoints: LlmEndpoints; tools: ToolDefinition[] }) {
  const config = temporalConfigFromEnv();
  bundle ??= bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../../workflows/index.ts'),
    logger: quiet,
  });
  const nativeConnection = await NativeConnection.connect({ address: config.address });
  const connection = await Connection.connect({ address: config.address });
  const taskQueue = `test-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
  const worker: Worker = await createJukeboxWorker({
    connection: nativeConnection,
    namespace: config.namespace,
    taskQueue,
    endpoints: options.endpoints,
    tools: options.tools,
    workflowBundle: await bundle,
  });
  // One worker for the whole file: runUntil would shut it down after the first run.
  const running = worker.run();
  return {
    worker,
    connection,
    namespace: config.namespace,
    taskQueue,
    async close() {
      worker.shutdown();
      await running;
      await connection.close();
      await nativeConnection.close();
    },
  };
}
