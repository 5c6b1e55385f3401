/**
 * The run an activity works for. A run that continued as new is one run in several Temporal executions
 * (segments); its tape and its Shadow Booth staging live under its first segment's run id, which the workflow
 * puts on every activity input of the later segments (`runKey`) and the worker's RunKeyInterceptor takes off
 * before the activity sees its input.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Context } from '@temporalio/activity';

const storage = new AsyncLocalStorage<string>();

export function runWithRunKey<T>(runKey: string | undefined, fn: () => Promise<T>): Promise<T> {
  return runKey === undefined ? fn() : storage.run(runKey, fn);
}

/** The run key of the activity running in this async context, if its run continued as new. */
export function currentRunKey(): string | undefined {
  return storage.getStore();
}

/**
 * The current activity's id among all of its run's activities: Temporal's activity id, which restarts in every
 * segment, qualified by the segment's run in a later segment (e.g. a booth step's checkpoint key).
 */
export function activityKey(): string {
  const info = Context.current().info;
  const key = currentRunKey();
  const own = info.workflowExecution?.runId;
  return key !== undefined && own !== undefined && own !== key
    ? `${own}:${info.activityId}`
    : info.activityId;
}

/** The workflow id and the run (first segment's) id the current activity's tape and staging belong to. */
export function activityRun(): { workflowId: string; runId: string } {
  const exec = Context.current().info.workflowExecution ?? { workflowId: 'no-workflow', runId: 'no-run' };
  return { workflowId: exec.workflowId, runId: currentRunKey() ?? exec.runId };
}
