/**
 * A run that continued as new is one run in several Temporal executions (src/temporal/workflow/continuation.ts):
 * its tape is named after the first, each later one is started by the one before (its last history event,
 * WorkflowExecutionContinuedAsNew, names it). These follow that chain on the server.
 */
import type { WorkflowClient } from '@temporalio/client';
import type { HistorySegment } from '../../timetravel/fork/historyPoint';

type History = Awaited<ReturnType<ReturnType<WorkflowClient['getHandle']>['fetchHistory']>>;

/** The execution a history's run continued as, or undefined (it ended, or is still going). */
export function continuedAs(history: History): string | undefined {
  const last = history.events?.at(-1);
  return last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId || undefined;
}

/**
 * Every execution's history of the run that starts with `firstRunId`, first to last: one for a run that never
 * continued as new. The last may still be running. `workflow`: a client's `workflow` (or a handle's `client`).
 */
export async function fetchRunHistories(
  workflow: Pick<WorkflowClient, 'getHandle'>,
  workflowId: string,
  firstRunId: string,
): Promise<HistorySegment[]> {
  const out: HistorySegment[] = [];
  const seen = new Set<string>();
  for (let runId: string | undefined = firstRunId; runId && !seen.has(runId); ) {
    seen.add(runId);
    const history = await workflow.getHandle(workflowId, runId).fetchHistory();
    out.push({ runId, history });
    runId = continuedAs(history);
  }
  return out;
}
