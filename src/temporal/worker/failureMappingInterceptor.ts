import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { JukeboxError } from '../../errors';
import { toApplicationFailure } from '../../errors/applicationFailure';

/**
 * Turns Jukebox's typed errors into ApplicationFailures so their retry semantics reach Temporal: a
 * non-retryable error (bad input, missing tool) fails the step at once instead of burning retries.
 */
export class FailureMappingInterceptor implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    try {
      return await next(input);
    } catch (err) {
      if (err instanceof JukeboxError) throw toApplicationFailure(err, { keepCause: true });
      throw err;
    }
  }
}
