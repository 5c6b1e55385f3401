import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { StepPayloads } from '../content/stepPayloads';
import { unresolvedContentError, unresolvedContentOf } from '../content/unresolvedContent';

/**
 * The activity side of the content store (src/temporal/content/): an activity whose input refers to a blob the
 * store lacks (or holds damaged) fails with ContentMissingError / ContentDamagedError naming the step and the
 * blob, before it runs; a result it returns is remembered as a step's, so the driver moves it out of the history
 * from the small threshold on. Innermost, so the tape records the attempt and the typed error.
 */
export class ContentInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly stepPayloads: StepPayloads | undefined) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    for (const arg of input.args) {
      const u = unresolvedContentOf(arg);
      if (u)
        throw unresolvedContentError(u, {
          what: u.step === undefined ? 'the activity input' : `the input of step ${u.step}`,
        });
    }
    const result = await next(input);
    this.stepPayloads?.rememberResult(result);
    return result;
  }
}
