import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { unresolvedContentError, unresolvedContentOf } from '../content/unresolvedContent';

/**
 * An activity whose input refers to a blob the content store lacks (or holds damaged) fails with
 * ContentMissingError / ContentDamagedError naming the step and the blob, before it runs. Innermost, so the tape
 * records the attempt and the typed error.
 */
export class UnresolvedContentInterceptor implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    for (const arg of input.args) {
      const u = unresolvedContentOf(arg);
      if (u)
        throw unresolvedContentError(u, {
          what: u.step === undefined ? 'the activity input' : `the input of step ${u.step}`,
        });
    }
    return next(input);
  }
}
