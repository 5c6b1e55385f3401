/**
 * A recording worker of the sample research agent against the local model server: what the benches that record
 * sample runs (cli, replay, streaming) start, so each states only what differs (its tape options).
 */
import type { NativeConnection } from '@temporalio/worker';
import { researchTools } from '../examples/sample/tools';
import { localEndpoints } from '../src/llm';
import { bundleAgentWorkflows, createJukeboxWorker } from '../src/temporal';
import { EXAMPLE_WORKFLOWS_PATH } from './paths';

type WorkerOptions = Parameters<typeof createJukeboxWorker>[0];

export async function sampleAgentWorker(options: {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  modelUrl: string;
  tape: WorkerOptions['tape'];
  /** The examples' workflows bundled once by the caller, when it also needs the bundle; else bundled here. */
  workflowBundle?: Awaited<ReturnType<typeof bundleAgentWorkflows>>;
}): ReturnType<typeof createJukeboxWorker> {
  return createJukeboxWorker({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    endpoints: localEndpoints(options.modelUrl),
    tools: researchTools,
    workflowBundle: options.workflowBundle ?? (await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH)),
    tape: options.tape,
  });
}
