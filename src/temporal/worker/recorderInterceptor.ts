import { CancelledFailure, Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { JukeboxError } from '../../errors';
import { runWithActivityTape } from '../../recorder/activityTape';
import {
  type Observation,
  RECORD_OUTCOME_ACTIVITY,
  RECORD_SEGMENT_ACTIVITY,
} from '../../recorder/observations';
import type { TapeRecorder } from '../../recorder/recorder';
import { currentRunKey } from '../activities/activityRun';
import { TOOL_POLICIES_ACTIVITY } from '../activities/stepActivities';

/**
 * A Jukebox step names its step on its input. Any other activity (a plain workflow's) takes its place among the
 * workflow's activities: the SDK numbers them 1, 2, ... in its activity ids.
 */
function splitInput(
  arg: unknown,
  activityId: string,
): { step: number; observations: Observation[]; rest: unknown } {
  const seq = /^[1-9][0-9]*$/.test(activityId) ? Number(activityId) - 1 : 0;
  if (typeof arg !== 'object' || arg === null || Array.isArray(arg))
    return { step: seq, observations: [], rest: arg };
  const { observations, ...rest } = arg as { observations?: Observation[]; step?: unknown };
  const step =
    typeof rest.step === 'number' && Number.isInteger(rest.step) && rest.step >= 0 ? rest.step : seq;
  return { step, observations: Array.isArray(observations) ? observations : [], rest };
}

function isNonRetryable(err: unknown, nonRetryableTypes: readonly string[]): boolean {
  if (err instanceof JukeboxError && err.nonRetryable) return true;
  if (
    err instanceof ApplicationFailure &&
    (err.nonRetryable || (err.type && nonRetryableTypes.includes(err.type)))
  )
    return true;
  return err instanceof Error && nonRetryableTypes.includes(err.name);
}

/**
 * Mirrors every activity onto the run's tape: its input (after the observations the workflow piggybacked on
 * it), then its result or error with whether Temporal will retry it. The llm and tool activities add their
 * own frames in between through currentActivityTape(). recordOutcome writes its own frames (the outcome must
 * be the tape's last frame before the seal), so it passes straight through, and so does toolPolicies, which
 * is no step (it hands the workflow its tools' timeouts and retry policies).
 */
export class TapeRecordingInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly recorder: TapeRecorder) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const ctx = Context.current();
    const info = ctx.info;
    if (
      info.activityType === RECORD_OUTCOME_ACTIVITY ||
      info.activityType === RECORD_SEGMENT_ACTIVITY ||
      info.activityType === TOOL_POLICIES_ACTIVITY
    )
      return next(input);
    const timings = this.recorder.timings;
    const t0 = timings ? performance.now() : 0;
    let inside = 0;
    let flushedInside = 0;
    const { step, observations, rest } = splitInput(input.args[0], info.activityId);
    const tape = this.recorder.forActivity(info, step, currentRunKey());
    tape.start(input.args.length > 1 ? [rest, ...input.args.slice(1)] : rest, observations);
    let result: unknown;
    try {
      // Not flushed here: the llm and tool steps flush activity.start together with their request, before
      // any I/O; an activity that records nothing of its own writes it with its result.
      const t1 = timings ? performance.now() : 0;
      try {
        result = await runWithActivityTape(tape, () => next(input));
      } finally {
        if (timings) {
          inside = performance.now() - t1;
          flushedInside = tape.flushMs;
        }
      }
    } catch (err) {
      const nonRetryable = isNonRetryable(err, info.retryPolicy?.nonRetryableErrorTypes ?? []);
      const max = info.retryPolicy?.maximumAttempts ?? 0;
      const cancelled = err instanceof CancelledFailure || ctx.cancellationSignal.aborted;
      const willRetry = !nonRetryable && !cancelled && (max === 0 || info.attempt < max);
      try {
        await tape.fail(err, { willRetry, nonRetryable });
      } catch (recordErr) {
        // The step's own error is what the workflow must see; the missing frame is logged, not swallowed.
        log.warn('could not record a step error on its tape', { error: String(recordErr), tape: tape.path });
      }
      throw err;
    }
    await tape.complete(result);
    if (timings) {
      timings.activities++;
      const total = performance.now() - t0;
      timings.interceptorMs += total;
      timings.activityMs += inside;
      timings.recorderMs += total - inside + flushedInside;
    }
    return result;
  }
}
