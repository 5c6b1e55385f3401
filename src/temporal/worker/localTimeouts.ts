import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { TIMEOUT_IS_FINAL } from '../../agent/tools/toolPolicy';
import { crossRealmError, JukeboxError, toApplicationFailure } from '../../errors';

/** A local step ran past its start-to-close timeout, and its retry policy makes timeouts final. */
export class StepTimedOutError extends JukeboxError {
  constructor(activityType: string, timeoutMs: number | undefined) {
    super(
      'STEP_TIMED_OUT',
      `The local ${activityType} step ran past its timeout of ${timeoutMs ?? '?'} ms and is not run again: its retry ` +
        'policy makes timeouts final (for a tool: raise its timeoutMs, or set retry.retryTimeouts to retry it).',
      { nonRetryable: true },
    );
  }
}
crossRealmError('StepTimedOutError', StepTimedOutError);

/** Local attempts that timed out, by run and activity, until their next attempt asks (at most ten minutes). */
const timedOut = new Map<string, number>();
const FORGET_AFTER_MS = 10 * 60_000;

/**
 * Gives local activities the timeout semantics the server gives activity tasks: when the retry policy lists
 * `TemporalTimeout:StartToClose` as non-retryable, an attempt that timed out is the last one. The SDK's core
 * retries a local activity after a timeout whatever its policy says (it matches only application failures
 * against the list), so a slow local tool would run again, even while its first attempt is still going. This
 * remembers each local attempt the SDK cancelled for its timeout, and fails the next attempt of that activity
 * at once, before it runs, with a non-retryable StepTimedOutError. Local retries stay on the worker that ran
 * the attempt, so the memory is this process's.
 */
export class LocalTimeoutInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const info = this.ctx.info;
    if (!info.isLocal || !info.retryPolicy?.nonRetryableErrorTypes?.includes(TIMEOUT_IS_FINAL))
      return next(input);
    const run = info.workflowExecution;
    const key = `${run?.workflowId}/${run?.runId}/${info.activityId}`;
    if (timedOut.delete(key))
      throw toApplicationFailure(new StepTimedOutError(info.activityType, info.startToCloseTimeoutMs));
    const signal = this.ctx.cancellationSignal;
    const onAbort = () => {
      if (!this.ctx.cancellationDetails?.timedOut && !String(signal.reason?.message).includes('TIMED_OUT'))
        return;
      const now = Date.now();
      for (const [k, at] of timedOut) if (now - at > FORGET_AFTER_MS) timedOut.delete(k);
      timedOut.set(key, now);
    };
    // The listener stays for as long as the attempt runs: a tool that ignores its signal outlives its timeout.
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await next(input);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}
