import { AsyncLocalStorage } from 'node:async_hooks';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';

const storage = new AsyncLocalStorage<(() => void)[]>();

/**
 * Runs `work` once the current activity attempt has handed its result (or error) back to Temporal: its tape
 * frames are fsynced and its completion is on its way, so the work no longer delays the step. Outside an
 * activity run by a Jukebox worker it runs on the next turn of the event loop.
 */
export function afterStep(work: () => void): void {
  const queue = storage.getStore();
  if (queue) queue.push(work);
  else setImmediate(work);
}

/**
 * The outermost activity interceptor: collects `afterStep` work and starts it after the attempt returned,
 * on the event loop's next check phase (by then the SDK has passed the completion to its core, which sends it
 * from its own threads). Used for work a later step needs and this one does not (a deferred embedding).
 */
export class AfterStepInterceptor implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const queue: (() => void)[] = [];
    try {
      return await storage.run(queue, () => next(input));
    } finally {
      if (queue.length)
        setImmediate(() => {
          for (const work of queue) work();
        });
    }
  }
}
