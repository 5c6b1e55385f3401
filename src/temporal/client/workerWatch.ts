/**
 * Whether any worker polls a run's task queue, from Temporal's DescribeTaskQueue pollers: a run started while no
 * worker is up waits on the server without a word, and this is what says so.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** No worker polled a run's task queue for `waitedMs` after the run started. */
export interface NoWorkerNotice {
  workflowId: string;
  taskQueue: string;
  namespace: string;
  /** The server's address, when the handle's connection says it. */
  address?: string;
  waitedMs: number;
}

/**
 * A worker long-polls: its poller entry is refreshed at least once a minute (the server's long-poll timeout),
 * and the server keeps the entry of one that stopped for minutes. One not seen for longer than this is gone.
 */
export const LIVE_POLLER_MS = 75_000;

type Timestamp =
  | { seconds?: number | { toNumber(): number } | null; nanos?: number | null }
  | null
  | undefined;

const msOf = (t: Timestamp): number => {
  const s = t?.seconds;
  return (typeof s === 'number' ? s : (s?.toNumber() ?? 0)) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
};

// biome-ignore lint/suspicious/noExplicitAny: any workflow's handle
type AnyHandle = WorkflowHandle<any>;

/** How many workers polled the run's workflow task queue within LIVE_POLLER_MS of `now`. */
export async function livePollers(handle: AnyHandle, taskQueue: string, now = Date.now()): Promise<number> {
  const res = await handle.client.workflowService.describeTaskQueue({
    namespace: handle.client.options.namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (res.pollers ?? []).filter((p) => now - msOf(p.lastAccessTime as Timestamp) <= LIVE_POLLER_MS)
    .length;
}

/** What a person waiting on `npm start` reads: what is missing, and what to do. */
export function noWorkerMessage(n: NoWorkerNotice): string {
  return (
    `no worker is polling task queue ${n.taskQueue} (namespace ${n.namespace}${n.address ? ` at ${n.address}` : ''}) ` +
    `after ${Math.round(n.waitedMs / 1000)} s; still waiting for one. Start a worker on that task queue (in a ` +
    '`jbx init` project: npm run worker, with the same JUKEBOX_TEMPORAL_ADDRESS, JUKEBOX_TEMPORAL_NAMESPACE and ' +
    `JUKEBOX_TASK_QUEUE); run ${n.workflowId} starts as soon as one polls, even if you stop waiting here (Ctrl-C).`
  );
}

export interface WorkerWatchOptions {
  /** First look this long after the watch starts (default 5 s), then every `everyMs` (default 5 s). */
  afterMs?: number;
  everyMs?: number;
  /** Called when a look finds no live poller (once, until a worker is seen again). */
  onNoWorker: (notice: NoWorkerNotice) => void;
  /** Called when a worker polls again after onNoWorker. */
  onWorker?: (notice: NoWorkerNotice) => void;
}

/**
 * Looks at the run's task queue until `stop()`: onNoWorker when no worker polls it, onWorker when one comes
 * back. A look that fails (the server restarting) is skipped; the run's result decides what the caller does.
 */
export function watchForWorker(handle: AnyHandle, options: WorkerWatchOptions): { stop(): void } {
  const started = Date.now();
  const everyMs = options.everyMs ?? 5_000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let taskQueue: string | undefined;
  let missing = false;
  const address = (handle.client.connection as { options?: { address?: unknown } }).options?.address;
  const look = async () => {
    try {
      taskQueue ??= (await handle.describe()).taskQueue;
      const live = await livePollers(handle, taskQueue);
      if (stopped) return;
      const notice: NoWorkerNotice = {
        workflowId: handle.workflowId,
        taskQueue,
        namespace: handle.client.options.namespace,
        ...(typeof address === 'string' ? { address } : {}),
        waitedMs: Date.now() - started,
      };
      if (live === 0 && !missing) options.onNoWorker(notice);
      else if (live > 0 && missing) options.onWorker?.(notice);
      missing = live === 0;
    } catch {
      // The result (or the next look) tells.
    }
    if (!stopped) timer = setTimeout(look, everyMs);
  };
  timer = setTimeout(look, options.afterMs ?? 5_000);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
