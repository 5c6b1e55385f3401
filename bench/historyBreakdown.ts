/**
 * Where a run's wall time goes, read from its Temporal history: every event carries the server's timestamp, so
 * the gaps between them split each step into the server's dispatch (schedule-to-start), the worker's work
 * (start-to-close) and the workflow tasks in between.
 */
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Milliseconds summed over one run, per phase; divide by `activities` for a per-step figure. */
export interface RunBreakdown {
  /** Activity tasks completed (local activities are not tasks: they are `localActivities`). */
  activities: number;
  /** Local activities, recorded as markers inside workflow tasks. */
  localActivities: number;
  workflowTasks: number;
  /** Activities started within 0.5 ms of being scheduled: handed out in the workflow task's response (eager). */
  eagerActivities: number;
  /** ActivityTaskScheduled -> ActivityTaskStarted: the server persisting the schedule and dispatching it. */
  activityScheduleToStartMs: number;
  /** ActivityTaskStarted -> ActivityTaskCompleted: the worker running it, plus the completion's RPC. */
  activityStartToCloseMs: number;
  /** WorkflowTaskScheduled -> WorkflowTaskStarted: persisting what triggered it, then dispatch to a poller. */
  workflowTaskScheduleToStartMs: number;
  /** WorkflowTaskStarted -> WorkflowTaskCompleted: the worker's activation, plus the completion's RPC. */
  workflowTaskStartToCloseMs: number;
  /** WorkflowExecutionStarted -> the first WorkflowTaskStarted: how long a new run waits for its first task. */
  firstTaskMs: number;
  /** WorkflowExecutionStarted -> the closing event. */
  totalMs: number;
}

function eventMs(e: HistoryEvent): number {
  const t = e.eventTime;
  if (!t) return 0;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

const CLOSING = new Set([
  'workflowExecutionCompletedEventAttributes',
  'workflowExecutionFailedEventAttributes',
]);

export function breakdownHistory(events: readonly HistoryEvent[]): RunBreakdown {
  const out: RunBreakdown = {
    activities: 0,
    localActivities: 0,
    workflowTasks: 0,
    eagerActivities: 0,
    activityScheduleToStartMs: 0,
    activityStartToCloseMs: 0,
    workflowTaskScheduleToStartMs: 0,
    workflowTaskStartToCloseMs: 0,
    firstTaskMs: 0,
    totalMs: 0,
  };
  const at = new Map<string, number>();
  const id = (n: unknown) => String(n);
  let started: number | undefined;
  let firstTaskSeen = false;
  for (const e of events) {
    const t = eventMs(e);
    at.set(id(e.eventId), t);
    if (e.workflowExecutionStartedEventAttributes) started = t;
    const wfStarted = e.workflowTaskStartedEventAttributes;
    if (wfStarted) {
      out.workflowTaskScheduleToStartMs += t - (at.get(id(wfStarted.scheduledEventId)) ?? t);
      if (!firstTaskSeen && started !== undefined) out.firstTaskMs = t - started;
      firstTaskSeen = true;
    }
    const wfDone = e.workflowTaskCompletedEventAttributes;
    if (wfDone) {
      out.workflowTasks++;
      out.workflowTaskStartToCloseMs += t - (at.get(id(wfDone.startedEventId)) ?? t);
    }
    const aStarted = e.activityTaskStartedEventAttributes;
    if (aStarted) {
      const scheduled = at.get(id(aStarted.scheduledEventId)) ?? t;
      out.activityScheduleToStartMs += t - scheduled;
      // An eagerly dispatched task starts while the server handles the completion that scheduled it; a task
      // that went through matching waited at least for a poll's hand-over (milliseconds).
      if (t - scheduled < 0.5) out.eagerActivities++;
    }
    const aDone = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
    if (aDone) {
      out.activities++;
      out.activityStartToCloseMs += t - (at.get(id(aDone.startedEventId)) ?? t);
    }
    if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') out.localActivities++;
    if (started !== undefined && Object.keys(e).some((k) => CLOSING.has(k) && e[k as keyof HistoryEvent]))
      out.totalMs = t - started;
  }
  return out;
}

/** Averages breakdowns of several runs of the same shape. */
export function meanBreakdown(runs: readonly RunBreakdown[]): RunBreakdown {
  const keys = Object.keys(runs[0]!) as (keyof RunBreakdown)[];
  const out = { ...runs[0]! };
  for (const k of keys) out[k] = runs.reduce((s, r) => s + r[k], 0) / runs.length;
  return out;
}
