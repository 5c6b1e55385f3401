import { Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, type Worker } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../devserver/config';
import type { LlmEndpoints } from '../../llm';
import { createJukeboxWorker } from '../../runtime';
import type { ToolDefinition } from '../../tools';

const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
let bundle: ReturnType<typeof bundleWorkflowCode> | undefined;

/** Connections to the suite's dev server plus an in-process worker on a task queue of the test's own. */
export async function connectTestWorker(options: { endpoints: LlmEndpoints; tools: ToolDefinition[] }) {
  const config = temporalConfigFromEnv();
  bundle ??= bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quiet });
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
  return {
    worker,
    connection,
    namespace: config.namespace,
    taskQueue,
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}
