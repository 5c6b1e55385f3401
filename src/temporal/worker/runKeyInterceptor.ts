import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { runWithRunKey } from '../activities/activityRun';

/**
 * Takes the run key (src/temporal/activities/activityRun.ts) off an activity's input and keeps it for the
 * activity's async context. Outermost but one, so the recorder and the activities see it and never the field.
 */
export class RunKeyInterceptor implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const first = input.args[0];
    if (typeof first !== 'object' || first === null || Array.isArray(first) || !('runKey' in first))
      return next(input);
    const { runKey, ...rest } = first as { runKey?: unknown };
    return runWithRunKey(typeof runKey === 'string' && runKey ? runKey : undefined, () =>
      next({ ...input, args: [rest, ...input.args.slice(1)] }),
    );
  }
}
