/**
 * Lines a run's Temporal history up with its tape: which history events (the ids the Temporal Web UI shows)
 * belong to which agent step, and which step a fork at a given event starts at. Each step is one activity, so
 * its events are the activity's Scheduled/Started/Completed/Failed/TimedOut/Canceled events, found through
 * the activity id the tape records on every activity frame. An event outside any step (workflow tasks,
 * timers, signals, markers, other activities) comes before the next step the workflow scheduled.
 */
import type { temporal } from '@temporalio/proto';
import { temporal as proto } from '@temporalio/proto';
import type { Timeline } from '../replay/timeline';
import { ForkRequestError, HistoryMismatchError } from './errors';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface HistoryEventRef {
  id: number;
  /** PascalCase, as the Web UI shows it: `ActivityTaskScheduled`, `TimerFired`, `WorkflowExecutionSignaled`. */
  type: string;
  /** For activity events: the activity's id and type, and on ActivityTaskStarted the attempt that ran. */
  activityId?: string;
  activityType?: string;
  attempt?: number;
}

export interface StepEvents {
  step: number;
  kind: 'llm' | 'tool';
  activityId: string;
  /** Inherited from a parent tape by a fork: no activity, so no events of this run. */
  inherited: boolean;
  events: HistoryEventRef[];
  /** First and last event id of the step (its ActivityTaskScheduled and its closing event), or null. */
  first: number | null;
  last: number | null;
}

export interface HistoryAlignment {
  workflowType: string | null;
  eventCount: number;
  lastEventId: number;
  events: HistoryEventRef[];
  steps: StepEvents[];
}

export interface ForkPoint {
  eventId: number;
  eventType: string;
  /** The step the fork starts at: it and every later step run live. */
  step: number;
  /** The event belongs to that step (an event of its activity), so the fork starts at the step's start. */
  inside: boolean;
  /** What happened, in words, for the user. */
  note: string;
}

const EVENT_TYPES = proto.api.enums.v1.EventType as unknown as Record<number, string>;

function pascal(enumName: string | undefined): string {
  if (!enumName) return 'Unknown';
  return enumName
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(String(v)));

/** The activity close/progress attributes that point back at their ActivityTaskScheduled event. */
const ACTIVITY_LINKS = [
  'activityTaskStartedEventAttributes',
  'activityTaskCompletedEventAttributes',
  'activityTaskFailedEventAttributes',
  'activityTaskTimedOutEventAttributes',
  'activityTaskCancelRequestedEventAttributes',
  'activityTaskCanceledEventAttributes',
] as const;

function eventRefs(history: History): HistoryEventRef[] {
  const scheduled = new Map<number, { activityId: string; activityType: string }>();
  const out: HistoryEventRef[] = [];
  for (const e of history.events ?? []) {
    const ref: HistoryEventRef = { id: num(e.eventId), type: pascal(EVENT_TYPES[num(e.eventType)]) };
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      const a = { activityId: String(s.activityId ?? ''), activityType: String(s.activityType?.name ?? '') };
      scheduled.set(ref.id, a);
      Object.assign(ref, a);
    }
    for (const key of ACTIVITY_LINKS) {
      const attrs = (e as Record<string, unknown>)[key] as {
        scheduledEventId?: unknown;
        attempt?: unknown;
      } | null;
      if (!attrs) continue;
      const a = scheduled.get(num(attrs.scheduledEventId));
      if (a) Object.assign(ref, a);
      if (key === 'activityTaskStartedEventAttributes') ref.attempt = num(attrs.attempt);
    }
    out.push(ref);
  }
  return out;
}

function started(history: History): { type: string | null; runId: string | null } {
  const first: HistoryEvent | undefined = history.events?.[0];
  const a = first?.workflowExecutionStartedEventAttributes;
  return { type: a?.workflowType?.name ?? null, runId: a?.originalExecutionRunId || null };
}

const STEP_ACTIVITY: Record<'llm' | 'tool', string> = { llm: 'llmStep', tool: 'toolStep' };

/**
 * Aligns a history with a tape's steps. Throws HistoryMismatchError when the history is of another run: a
 * different workflow type, or a live step of the tape whose activity the history never scheduled.
 */
export function alignHistory(t: Timeline, history: History, historySource: string): HistoryAlignment {
  const events = eventRefs(history);
  const { type, runId } = started(history);
  const h = t.tape.header;
  if (type !== null && type !== h.workflowType)
    throw new HistoryMismatchError(
      t.file,
      historySource,
      `the history is of a ${type} workflow, the tape of ${h.workflowType}`,
    );
  if (runId !== null && h.runId && runId !== h.runId)
    throw new HistoryMismatchError(
      t.file,
      historySource,
      `the history is of run ${runId}, the tape of run ${h.runId}`,
    );
  const byActivity = new Map<string, HistoryEventRef[]>();
  for (const e of events)
    if (e.activityId !== undefined) {
      const list = byActivity.get(e.activityId) ?? [];
      list.push(e);
      byActivity.set(e.activityId, list);
    }
  const steps: StepEvents[] = t.steps.map((s) => {
    const inherited = s.activityId.startsWith('inherited-');
    const own = inherited ? [] : (byActivity.get(s.activityId) ?? []);
    if (!inherited && (!own.length || own[0]!.activityType !== STEP_ACTIVITY[s.kind]))
      throw new HistoryMismatchError(
        t.file,
        historySource,
        own.length
          ? `step ${s.step}'s activity ${s.activityId} is a ${own[0]!.activityType} in the history, a ${STEP_ACTIVITY[s.kind]} on the tape`
          : `the history never scheduled activity ${s.activityId}, which the tape records as step ${s.step}`,
      );
    return {
      step: s.step,
      kind: s.kind,
      activityId: s.activityId,
      inherited,
      events: own,
      first: own[0]?.id ?? null,
      last: own.at(-1)?.id ?? null,
    };
  });
  return {
    workflowType: type,
    eventCount: events.length,
    lastEventId: events.at(-1)?.id ?? 0,
    events,
    steps,
  };
}

/**
 * The step a fork at history event `eventId` starts at. An event of a step's activity is inside that step: the
 * fork starts at the step's start (the step runs again, live). Any other event comes before the first step
 * scheduled after it: the fork inherits every step that finished before the event.
 */
export function stepAtEvent(a: HistoryAlignment, eventId: number, tapeFile: string): ForkPoint {
  const event = a.events.find((e) => e.id === eventId);
  if (!event)
    throw new ForkRequestError(
      `the run's history has events 1..${a.lastEventId}; there is no event ${eventId}. ` +
        `Pass --event with one of those ids (\`jbx show ${tapeFile} --events\` lists each step's events)`,
    );
  const own = a.steps.find((s) => s.events.some((e) => e.id === eventId));
  if (own)
    return {
      eventId,
      eventType: event.type,
      step: own.step,
      inside: true,
      note:
        `event ${eventId} (${event.type}) is inside step ${own.step} (events ${own.first}..${own.last}); ` +
        `the fork starts at the start of step ${own.step}, which runs again live`,
    };
  const next = a.steps.find((s) => s.first !== null && s.first > eventId);
  const lastLive = [...a.steps].reverse().find((s) => s.first !== null);
  // Before the first live step of a fork's own history: the inherited steps stay inherited.
  const step = next?.step ?? (lastLive ? lastLive.step + 1 : a.steps.length);
  return {
    eventId,
    eventType: event.type,
    step,
    inside: false,
    note: next
      ? `event ${eventId} (${event.type}) comes before step ${step} (scheduled at event ${next.first}); the fork inherits steps 0..${step - 1} and runs step ${step} on live`
      : `event ${eventId} (${event.type}) comes after the last step; the fork inherits all ${step} steps`,
  };
}
