import path from 'node:path';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createStepActivities, FailureMappingInterceptor } from '../activities';
import { LlmClient, type LlmEndpoints } from '../llm';
import { type ToolDefinition, ToolRegistry } from '../tools';

export const DEFAULT_TASK_QUEUE = 'jukebox';

export interface JukeboxWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  endpoints: LlmEndpoints;
  tools: ToolDefinition[];
  /** Defaults to this project's workflows/; point it at your own module exporting agentWorkflow(...)s. */
  workflowsPath?: string;
  /** A pre-built bundle saves the seconds of bundling when many workers start (tests, benchmarks). */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

export function createJukeboxWorker(options: JukeboxWorkerOptions): Promise<Worker> {
  const activities = createStepActivities({
    llm: new LlmClient(options.endpoints),
    tools: new ToolRegistry(options.tools),
  });
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath: options.workflowsPath ?? path.join(__dirname, '../workflows/index.ts') }),
    activities,
    interceptors: { activity: [() => ({ inbound: new FailureMappingInterceptor() })] },
  });
}
