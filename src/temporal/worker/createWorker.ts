import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { JukeboxError } from '../../errors';
import { JukeboxPlugin, type JukeboxPluginOptions } from './jukeboxPlugin';

export const DEFAULT_TASK_QUEUE = 'jukebox';

/** A Jukebox worker was asked for without the workflows it should run. */
export class WorkflowsModuleRequiredError extends JukeboxError {
  constructor() {
    super(
      'WORKFLOWS_MODULE_REQUIRED',
      'createJukeboxWorker needs `workflowsPath` (your module exporting agentWorkflow(...)s, e.g. ' +
        "path.join(__dirname, 'workflows.ts')) or a prebuilt `workflowBundle`.",
      { nonRetryable: true },
    );
  }
}

export interface JukeboxWorkerOptions extends JukeboxPluginOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  /** Your workflows module: it exports `agentWorkflow(...)`s (and any plain workflows) from `jukebox/workflow`. */
  workflowsPath?: string;
  /** A pre-built bundle saves the seconds of bundling when many workers start (tests, benchmarks). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * Temporal worker settings layered over LATENCY_WORKER_OPTIONS (docs/performance.md), e.g. poller counts or
   * the sticky cache size for a worker that runs many agents at once.
   */
  workerOptions?: Partial<
    Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'activities' | 'interceptors' | 'sinks'>
  >;
}

/**
 * A worker that runs only Jukebox agents: Worker.create with one JukeboxPlugin. A team with a worker of its own
 * adds `new JukeboxPlugin(...)` to its `plugins` instead.
 */
export async function createJukeboxWorker(options: JukeboxWorkerOptions): Promise<Worker> {
  const { connection, namespace, taskQueue, workflowsPath, workflowBundle, workerOptions, ...plugin } =
    options;
  if (!workflowsPath && !workflowBundle) throw new WorkflowsModuleRequiredError();
  return Worker.create({
    ...workerOptions,
    connection,
    namespace,
    taskQueue: taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(workflowBundle ? { workflowBundle } : { workflowsPath }),
    plugins: [...(workerOptions?.plugins ?? []), new JukeboxPlugin(plugin)],
  });
}
