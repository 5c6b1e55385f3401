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
  /** The execution whose history holds it, for a run of several (a run that continued as new). */
  runId?: string;
}

export interface StepEvents {
  step: number;
  kind: 'llm' | 'tool';
  activityId: string;
  /** The execution the step ran in, for a run of several. */
  runId?: string;
  /** Inherited from a parent tape by a fork: no activity, so no events of this run. */
  inherited: boolean;
  events: HistoryEventRef[];
  /** First and last event id of the step (its ActivityTaskScheduled and its closing event), or null. */
  first: number | null;
  last: number | null;
}

/** One execution's history: a run that continued as new has one per segment, first to last. */
export interface HistorySegment {
  runId: string;
  history: History;
}

export interface HistoryAlignment {
  workflowType: string | null;
  /** Events of every execution. */
  eventCount: number;
  /** The first execution's last event id. */
  lastEventId: number;
  /** Every execution's events, in order (event ids start again in each). */
  events: HistoryEventRef[];
  steps: StepEvents[];
  /** The executions, first to last, with the first step each ran (one for a run that never continued). */
  segments: { runId: string; eventCount: number; lastEventId: number; firstStep: number | null }[];
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

function started(history: History): { type: string | null; runId: string | null; first: string | null } {
  const first: HistoryEvent | undefined = history.events?.[0];
  const a = first?.workflowExecutionStartedEventAttributes;
  return {
    type: a?.workflowType?.name ?? null,
    runId: a?.originalExecutionRunId || null,
    first: a?.firstExecutionRunId || null,
  };
}

const STEP_ACTIVITY: Record<'llm' | 'tool', string> = { llm: 'llmStep', tool: 'toolStep' };

/**
 * Aligns a run's history with its tape's steps: one history, or one per execution of a run that continued as
 * new (its first execution is the tape's run; each step found in the execution the tape says it ran in). Throws
 * HistoryMismatchError when the history is of another run: a different workflow type, or a live step of the
 * tape whose activity the history never scheduled.
 */
export function alignHistory(
  t: Timeline,
  history: History | readonly HistorySegment[],
  historySource: string,
): HistoryAlignment {
  const h = t.tape.header;
  const segments: readonly HistorySegment[] = Array.isArray(history)
    ? history
    : [{ runId: h.runId, history: history as History }];
  if (segments.length === 0) throw new HistoryMismatchError(t.file, historySource, 'it holds no history');
  const several = segments.length > 1;
  const events: HistoryEventRef[] = [];
  const byActivity = new Map<string, HistoryEventRef[]>();
  const outline: HistoryAlignment['segments'] = [];
  let type: string | null = null;
  segments.forEach((seg, i) => {
    const own = eventRefs(seg.history);
    const start = started(seg.history);
    type ??= start.type;
    if (start.type !== null && start.type !== h.workflowType)
      throw new HistoryMismatchError(
        t.file,
        historySource,
        `the history is of a ${start.type} workflow, the tape of ${h.workflowType}`,
      );
    if (i === 0 && start.runId !== null && h.runId && start.runId !== h.runId)
      throw new HistoryMismatchError(
        t.file,
        historySource,
        `the history is of run ${start.runId}, the tape of run ${h.runId}`,
      );
    if (i > 0 && start.first !== null && h.runId && start.first !== h.runId)
      throw new HistoryMismatchError(
        t.file,
        historySource,
        `its execution ${seg.runId} continues run ${start.first}, the tape is of run ${h.runId}`,
      );
    for (const e of own) {
      if (several) e.runId = seg.runId;
      events.push(e);
      if (e.activityId === undefined) continue;
      const k = `${seg.runId}/${e.activityId}`;
      const list = byActivity.get(k) ?? [];
      list.push(e);
      byActivity.set(k, list);
    }
    outline.push({
      runId: seg.runId,
      eventCount: own.length,
      lastEventId: own.at(-1)?.id ?? 0,
      firstStep: null,
    });
  });
  const steps: StepEvents[] = t.steps.map((s) => {
    const inherited = s.activityId.startsWith('inherited-');
    const runId = s.runId ?? h.runId;
    const own = inherited ? [] : (byActivity.get(`${runId}/${s.activityId}`) ?? []);
    if (!inherited && (!own.length || own[0]!.activityType !== STEP_ACTIVITY[s.kind]))
      throw new HistoryMismatchError(
        t.file,
        historySource,
        own.length
          ? `step ${s.step}'s activity ${s.activityId} is a ${own[0]!.activityType} in the history, a ${STEP_ACTIVITY[s.kind]} on the tape`
          : `the history never scheduled activity ${s.activityId}${several || s.runId ? ` in execution ${runId}` : ''}, which the tape records as step ${s.step}`,
      );
    const seg = outline.find((o) => o.runId === runId);
    if (seg && seg.firstStep === null && !inherited) seg.firstStep = s.step;
    return {
      step: s.step,
      kind: s.kind,
      activityId: s.activityId,
      ...(several ? { runId } : {}),
      inherited,
      events: own,
      first: own[0]?.id ?? null,
      last: own.at(-1)?.id ?? null,
    };
  });
  return {
    workflowType: type,
    eventCount: events.length,
    lastEventId: outline[0]!.lastEventId,
    events,
    steps,
    segments: outline,
  };
}

/**
 * The step a fork at history event `eventId` starts at. An event of a step's activity is inside that step: the
 * fork starts at the step's start (the step runs again, live). Any other event comes before the first step
 * scheduled after it: the fork inherits every step that finished before the event. For a run of several
 * executions (it continued as new) `runId` says whose event it is: event ids start again in each.
 */
export function stepAtEvent(
  a: HistoryAlignment,
  eventId: number,
  tapeFile: string,
  runId?: string,
): ForkPoint {
  const segments = a.segments ?? [];
  const seg = runId === undefined ? segments[0] : segments.find((x) => x.runId === runId);
  if (runId !== undefined && !seg)
    throw new ForkRequestError(
      `run ${runId} is not an execution of this run; its executions are ${segments.map((x) => x.runId).join(', ')}`,
    );
  if (segments.length > 1 && runId === undefined)
    throw new ForkRequestError(
      `this run continued as new: it has ${segments.length} executions (${segments.map((x) => x.runId).join(', ')}), each with event ids from 1. ` +
        "Pass --run-id with the execution whose event you mean (`jbx show --events` lists each step's execution)",
    );
  const inSeg = (e: { runId?: string }) => segments.length <= 1 || e.runId === seg?.runId;
  const events = a.events.filter(inSeg);
  const steps = a.steps.filter(inSeg);
  const last = events.at(-1)?.id ?? 0;
  const event = events.find((e) => e.id === eventId);
  if (!event)
    throw new ForkRequestError(
      `the ${segments.length > 1 ? `history of execution ${seg?.runId}` : "run's history"} has events 1..${last}; there is no event ${eventId}. ` +
        `Pass --event with one of those ids (\`jbx show ${tapeFile} --events\` lists each step's events)`,
    );
  const own = steps.find((s) => s.events.some((e) => e.id === eventId));
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
  const next = steps.find((s) => s.first !== null && s.first > eventId);
  const lastLive = [...steps].reverse().find((s) => s.first !== null);
  // Past this execution's last step: the next execution's first step (a run that continued as new).
  const later = segments.slice(segments.indexOf(seg!) + 1).find((x) => x.firstStep !== null);
  // Before the first live step of a fork's own history: the inherited steps stay inherited.
  const step = next?.step ?? later?.firstStep ?? (lastLive ? lastLive.step + 1 : a.steps.length);
  return {
    eventId,
    eventType: event.type,
    step,
    inside: false,
    note: next
      ? `event ${eventId} (${event.type}) comes before step ${step} (scheduled at event ${next.first}); the fork inherits steps 0..${step - 1} and runs step ${step} on live`
      : step < a.steps.length
        ? `event ${eventId} (${event.type}) comes after this execution's last step; the fork inherits steps 0..${step - 1} and runs step ${step} on live`
        : `event ${eventId} (${event.type}) comes after the last step; the fork inherits all ${step} steps`,
  };
}
