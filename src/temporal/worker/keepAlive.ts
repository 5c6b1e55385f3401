import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';

/**
 * When a running step sends its first heartbeat and how often it sends one, for a heartbeat timeout.
 *
 * First: after a tenth of the timeout, at most a second. The server writes every heartbeat it receives to the
 * run's state, so a step that finishes in milliseconds should send none; a step that never heartbeated is timed
 * out from its start, so a dead worker is noticed just as soon.
 *
 * Then: every tenth of the timeout. The SDK forwards at most one heartbeat per 0.8 x timeout to the server (the
 * latest one it was given), so calling more often costs no server writes; calling often keeps a fresh one
 * waiting in the SDK when its throttle interval ends, even if the event loop stalls for a while.
 */
export function keepAliveSchedule(heartbeatTimeoutMs: number): { firstMs: number; everyMs: number } {
  return { firstMs: Math.min(1_000, heartbeatTimeoutMs / 10), everyMs: heartbeatTimeoutMs / 10 };
}

/**
 * Heartbeats each of Jukebox's activities that has a heartbeat timeout on a timer, for as long as it runs,
 * whatever it does (a tool that runs a test suite for minutes, a model that thinks before its first token, a
 * commit copying files): a live step is never declared dead by the heartbeat timeout, and a worker that dies
 * stops the timer with it, so the server still notices within the timeout and retries the step elsewhere. The
 * timer is also what brings a cancellation to a running step (the server answers a heartbeat with "cancel
 * requested"), so `Context.cancellationSignal` fires for every step, not only for those that report progress.
 *
 * The heartbeats carry no details: the last one ends up in the run's history when a step times out, and an
 * empty payload keeps that record (and each server write) minimal. Local activities cannot heartbeat and are
 * left alone. A step that blocks the event loop (synchronous CPU work) blocks this timer too: keep such work
 * in a worker thread or a child process.
 *
 * Only the activity types in `kept` (Jukebox's own) are kept alive. Other activities on the same worker (a
 * JukeboxPlugin added to a worker that has activities of its own) keep the heartbeats they send themselves: a
 * timer beating for them would hide one that hangs, and its empty heartbeats would replace the progress details
 * the activity reads back on its next attempt.
 */
export class KeepAliveInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: Context,
    private readonly kept: ReadonlySet<string>,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const { heartbeatTimeoutMs, isLocal, activityType } = this.ctx.info;
    if (isLocal || !heartbeatTimeoutMs || !this.kept.has(activityType)) return next(input);
    const { firstMs, everyMs } = keepAliveSchedule(heartbeatTimeoutMs);
    const beat = () => this.ctx.heartbeat();
    let every: NodeJS.Timeout | undefined;
    const first = setTimeout(() => {
      beat();
      every = setInterval(beat, everyMs);
    }, firstMs);
    try {
      return await next(input);
    } finally {
      clearTimeout(first);
      clearInterval(every);
    }
  }
}
