import type { Connection, WorkflowHandle } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { AgentRunResult, StepSummary } from '../../agent/context';
import { type AgentBreakerOptions, resolveAgentBreakerConfig } from '../../breaker/config';
import type { ContentOptions } from '../content/dataConverter';
import { DEFAULT_TASK_QUEUE } from '../worker/createWorker';
import type { AgentRunOptions } from '../workflow/runOptions';
import { jukeboxClient } from './jukeboxClient';
import { type NoWorkerNotice, noWorkerMessage, watchForWorker } from './workerWatch';

export interface StartAgentOptions {
  /**
   * A NativeConnection shared with a worker of this process makes the start eager: the server hands the run's
   * first workflow task straight back to that worker instead of through its task queue.
   */
  connection: Connection | NativeConnection;
  namespace: string;
  taskQueue?: string;
  workflowId?: string;
  runOptions?: AgentRunOptions;
  /** This run's circuit breaker (same as runOptions.breaker, which it overrides); `false` for none. */
  breaker?: AgentBreakerOptions | false;
  /** The runs' content store, as the workers have it (default: the one the environment names). */
  content?: ContentOptions;
}

/**
 * Starts an agent run; the workflow type is the agent's name. A breaker option that cannot be enforced (a cap
 * that is not a positive number, a bad threshold) throws BreakerConfigError here, before the run exists.
 */
export async function startAgent<I, O>(
  agentName: string,
  input: I,
  options: StartAgentOptions,
): Promise<WorkflowHandle<(input: I, options?: AgentRunOptions) => Promise<AgentRunResult<O>>>> {
  const runOptions: AgentRunOptions = {
    ...options.runOptions,
    ...(options.breaker !== undefined ? { breaker: options.breaker } : {}),
  };
  if (runOptions.breaker !== undefined && runOptions.breaker !== false)
    resolveAgentBreakerConfig(runOptions.breaker);
  const client = jukeboxClient(options.connection, options.namespace, options.content);
  return client.workflow.start<(input: I, options?: AgentRunOptions) => Promise<AgentRunResult<O>>>(
    agentName,
    {
      taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
      workflowId:
        options.workflowId ??
        `${agentName}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
      args: [input, runOptions],
      // Only a NativeConnection can take the first task back; the server falls back to the queue when the
      // process has no worker with a free slot on this task queue.
      requestEagerStart: options.connection instanceof NativeConnection,
    },
  );
}

export interface WaitOptions {
  /** How often the run's steps are asked for (default 200 ms). */
  pollMs?: number;
  /**
   * After this long with no worker polling the run's task queue, `onNoWorker` is told (default 5000 ms; `false`:
   * never look). A run started while no worker is up otherwise waits on the server without a word.
   */
  noWorkerAfterMs?: number | false;
  /** Default: prints noWorkerMessage on stderr. */
  onNoWorker?: (notice: NoWorkerNotice) => void;
  /** A worker polls again after onNoWorker. Default: says so on stderr. */
  onWorker?: (notice: NoWorkerNotice) => void;
}

/**
 * Waits for the result while reporting each step as it finishes. Progress comes from a workflow query, so it
 * works from any process, not only the one that started the run. While no worker polls the run's task queue,
 * it says so (WaitOptions.onNoWorker) and keeps waiting.
 */
export async function waitWithProgress<O>(
  // biome-ignore lint/suspicious/noExplicitAny: any agent input; only the result type matters here
  handle: WorkflowHandle<(input: any, options?: AgentRunOptions) => Promise<AgentRunResult<O>>>,
  onStep: (step: StepSummary) => void,
  options: number | WaitOptions = {},
): Promise<AgentRunResult<O>> {
  const opts: WaitOptions = typeof options === 'number' ? { pollMs: options } : options;
  const pollMs = opts.pollMs ?? 200;
  let seen = 0;
  let done = false;
  const watch =
    opts.noWorkerAfterMs === false
      ? undefined
      : watchForWorker(handle, {
          afterMs: opts.noWorkerAfterMs ?? 5_000,
          onNoWorker: opts.onNoWorker ?? ((n) => process.stderr.write(`${noWorkerMessage(n)}\n`)),
          onWorker:
            opts.onWorker ??
            ((n) =>
              process.stderr.write(`a worker is polling task queue ${n.taskQueue} now; the run goes on\n`)),
        });
  const result = handle.result().finally(() => {
    done = true;
    watch?.stop();
  });
  const poll = (async () => {
    while (!done) {
      try {
        const steps = await handle.query<StepSummary[]>('jukebox.progress');
        for (; seen < steps.length; seen++) onStep(steps[seen]!);
      } catch {
        // A query can fail while no worker is polling (e.g. between a crash and a restart); the result decides.
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
  })();
  const final = await result;
  await poll;
  for (; seen < final.steps.length; seen++) onStep(final.steps[seen]!);
  return final;
}
