/**
 * Workflow interceptors every Jukebox worker bundles (not a workflow): they seal the tape of a plain Temporal
 * workflow, one that is not a Jukebox agent, when it ends. Its activities are recorded by the worker's activity
 * interceptor like an agent's steps; an agent records its own outcome with the recordOutcome activity, and a
 * workflow seen scheduling that activity is left alone. The outcome leaves through the tape sink, so the
 * workflow's history gains no event. Runs inside the workflow sandbox: no I/O, no Node APIs.
 */
import {
  type ActivityInput,
  ContinueAsNew,
  isCancellation,
  type LocalActivityInput,
  type Next,
  proxySinks,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { RECORD_OUTCOME_ACTIVITY } from '../../recorder/observations';
import type { TapeSinks } from '../worker/tapeSinks';

export const interceptors: WorkflowInterceptorsFactory = () => {
  let scheduled = 0;
  let sealsItself = false;
  const seen = (activityType: string) => {
    if (activityType === RECORD_OUTCOME_ACTIVITY) sealsItself = true;
    else scheduled++;
  };
  const { jukeboxTape } = proxySinks<TapeSinks>();
  const outcome = (status: 'completed' | 'failed' | 'cancelled', result?: unknown, err?: unknown) => {
    // Nothing was recorded (no activity ran), or the agent seals its own tape.
    if (sealsItself || scheduled === 0) return;
    jukeboxTape.outcome({
      step: scheduled,
      status,
      ...(result === undefined ? {} : { result }),
      ...(err === undefined
        ? {}
        : {
            error: { name: (err as Error)?.name ?? 'Error', message: (err as Error)?.message ?? String(err) },
          }),
    });
  };
  const inbound: WorkflowInboundCallsInterceptor = {
    async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
      try {
        const result = await next(input);
        outcome('completed', result);
        return result;
      } catch (err) {
        // A continued run goes on in a new run (with its own tape); this one has no outcome of its own.
        if (!(err instanceof ContinueAsNew))
          outcome(isCancellation(err) ? 'cancelled' : 'failed', undefined, err);
        throw err;
      }
    },
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
      seen(input.activityType);
      return next(input);
    },
    scheduleLocalActivity(
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) {
      seen(input.activityType);
      return next(input);
    },
  };
  return { inbound: [inbound], outbound: [outbound] };
};
