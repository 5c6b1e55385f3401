/**
 * A tape read as the agent saw it: one entry per step (the final attempt of its llm or tool activity, with the
 * request resolved from blobs, the response, tokens, cost, side effects), the random/clock readings in order,
 * the run's input and its outcome. Offline replay, fork and diff all read tapes through this.
 */
import type { BoothChangeSet } from '../../booth/verifiers';
import type { LlmResponse, ToolCall } from '../../llm/types';
import {
  BlobRef,
  chunkEntries,
  derefValue,
  readTape,
  resolveMessages,
  type Tape,
  type TapeFrame,
} from '../../recorder/tape';
import { ApprovalReader, approvalRollbackSteps, type RecordedApproval } from './approvals';
import {
  type BoothStep,
  boothStepOf,
  isBoothActivity,
  type RecordedActivity,
  type RecordedError,
} from './boothSteps';
import { TapeNotReplayableError } from './errors';

type P = Record<string, unknown>;

export interface RecordedRequest {
  provider: string;
  model: string;
  system?: string;
  temperature?: number;
  maxTokens?: number;
  stream?: boolean;
  messages: unknown[];
  tools?: unknown[];
}

export interface StepEffect {
  kind: string;
  frame: number;
  payload: P;
}

export interface TimelineStep {
  step: number;
  kind: 'llm' | 'tool';
  activityId: string;
  /**
   * The execution the step ran in, when it is not the header's: a later segment of a run that continued as new,
   * whose activity ids start again (FORMAT.md, `segment`).
   */
  runId?: string;
  attempts: number;
  /** First frame of the step on the tape (its first observation, blob or activity.start). */
  firstFrame: number;
  /** Last frame of the step. */
  lastFrame: number;
  /** The llm.request or tool.call frame of the final attempt. */
  requestFrame: number;
  request?: RecordedRequest;
  response?: LlmResponse;
  /** Chunks as recorded: [seq, offsetMs, text|null, raw?]. */
  chunks: unknown[][];
  toolName?: string;
  args?: Record<string, unknown>;
  output?: unknown;
  /** The final attempt's error (a failed tool or model call). */
  error?: { name: string; message: string; code?: string };
  usage?: { inputTokens: number; outputTokens: number };
  cost: number | null;
  /**
   * The step's side effects: those of the attempt whose staging counted (a Shadow Booth tool step's final
   * attempt may reuse an earlier attempt's checkpoint; attempts whose partial staging was thrown away never count).
   */
  effects: StepEffect[];
  /** A booth tool step: which attempt's staging counted, whether the final attempt reused it, what it discarded. */
  staging?: { attempt: number; reused: boolean; discarded?: number };
}

export interface TimelineObservation {
  seq: number;
  kind: 'random' | 'clock';
  value: number;
  step: number;
  frame: number;
}

export interface Timeline {
  file: string;
  tape: Tape;
  /** The llm and tool steps. */
  steps: TimelineStep[];
  /** The Shadow Booth's steps: each `ctx.commit` and `ctx.rollback`, with what the agent got from it. */
  booth: BoothStep[];
  /** Every approval asked (a gate, a tool call, an MCP call waiting for a person) and how it ended, by step. */
  approvals: RecordedApproval[];
  /**
   * Step numbers the workflow took for itself, not for an agent call (a circuit-breaker trip records itself as
   * a step): a replay of the agent skips them as the workflow did.
   */
  workflowSteps: number[];
  observations: TimelineObservation[];
  /** The agent input, recorded on the first step's activity input (`agentInput`). */
  input: { present: boolean; value: unknown };
  /** `step`: the number of steps the run had taken when it ended. */
  outcome: { status: string; result?: unknown; error?: P; frame: number; step: number } | null;
}

/** Activities that take a step number of their own without being an agent call. */
const WORKFLOW_STEP_ACTIVITIES = new Set(['breakerRecordTrip']);

const STEP_ACTIVITIES: Record<string, 'llm' | 'tool'> = { llmStep: 'llm', toolStep: 'tool' };

const memos = new WeakMap<Tape, Map<string, unknown>>();

/** One decoded-message memo per tape: every step of a conversation shares its recorded message objects. */
function messageMemo(tape: Tape): Map<string, unknown> {
  const memo = memos.get(tape) ?? new Map<string, unknown>();
  memos.set(tape, memo);
  return memo;
}

/** A payload field's value, its blob decoded; a reference to a blob the tape lacks makes it unreplayable. */
function blobValue(tape: Tape, ref: unknown): unknown {
  const value = derefValue(tape, ref);
  if (value === undefined && ref instanceof BlobRef)
    throw new TapeNotReplayableError(tape.header.tapeId, `blob ${ref.hash} is missing`);
  return value;
}

function sharedBlobValue(tape: Tape, ref: unknown): unknown {
  const memo = messageMemo(tape);
  if (!(ref instanceof BlobRef)) return blobValue(tape, ref);
  if (!memo.has(ref.hash)) memo.set(ref.hash, blobValue(tape, ref));
  return memo.get(ref.hash);
}

interface Attempt {
  activityId: string;
  /** The segment's run id, when not the header's. */
  runId?: string;
  /** The activity's own (segment's) run plus its id: ids restart in each segment of a run that continued as new. */
  key: string;
  attempt: number;
  /** The activity type, and for the agent's llm and tool steps their kind. */
  type: string;
  kind?: 'llm' | 'tool';
  step: number;
  frames: TapeFrame[];
  input?: unknown;
}

export function readTimeline(input: string | Tape, name?: string): Timeline {
  const tape = typeof input === 'string' ? readTape(input) : input;
  const file = typeof input === 'string' ? input : (name ?? tape.header.tapeId);
  const attempts = new Map<string, Attempt>();
  const activityType = new Map<string, string>();
  const firstOfStep = new Map<number, number>();
  const lastOfStep = new Map<number, number>();
  const observations: TimelineObservation[] = [];
  let outcome: Timeline['outcome'] = null;
  let agentInput: Timeline['input'] = { present: false, value: undefined };
  const approvalReader = new ApprovalReader();

  for (const f of tape.frames) {
    if (f.kind === 'seal') continue;
    if (f.kind !== 'outcome') {
      if (!firstOfStep.has(f.step)) firstOfStep.set(f.step, f.index);
      lastOfStep.set(f.step, f.index);
    }
    if (f.kind === 'blob') continue;
    const p = f.payload as P;
    if (f.kind === 'random' || f.kind === 'clock') {
      const value = f.kind === 'random' ? (p.values as number[])[0]! : (p.nowMs as number);
      observations.push({ seq: p.seq as number, kind: f.kind, value, step: f.step, frame: f.index });
      continue;
    }
    if (f.kind === 'approval') {
      approvalReader.add(f);
      continue;
    }
    if (f.kind === 'outcome') {
      outcome = { status: String(p.status), frame: f.index, step: f.step };
      if (p.result !== undefined) outcome.result = blobValue(tape, p.result);
      if (p.error !== undefined) outcome.error = p.error as P;
      continue;
    }
    const activityId = typeof p.activityId === 'string' ? p.activityId : undefined;
    if (!activityId) continue;
    const activityKey = `${typeof p.runId === 'string' ? p.runId : tape.header.runId}/${activityId}`;
    if (f.kind === 'activity.start') activityType.set(activityKey, String(p.activityType));
    const type = activityType.get(activityKey) ?? '';
    const kind = STEP_ACTIVITIES[type];
    if (!kind && !isBoothActivity(type) && !WORKFLOW_STEP_ACTIVITIES.has(type)) continue;
    const key = `${activityKey}#${p.attempt}`;
    let a = attempts.get(key);
    if (!a) {
      a = {
        activityId,
        ...(typeof p.runId === 'string' && p.runId !== tape.header.runId ? { runId: p.runId } : {}),
        key: activityKey,
        attempt: p.attempt as number,
        type,
        kind,
        step: f.step,
        frames: [],
      };
      attempts.set(key, a);
    }
    a.frames.push(f);
    if (f.kind === 'activity.start' && p.input !== undefined) {
      a.input = blobValue(tape, p.input);
      const i = a.input as P | null;
      if (kind && !agentInput.present && i && typeof i === 'object' && 'agentInput' in i)
        agentInput = { present: true, value: i.agentInput };
    }
  }

  // The final attempt of each step is what the workflow saw.
  const finalOf = new Map<number, Attempt>();
  const attemptCount = new Map<number, number>();
  const others: Attempt[] = [];
  for (const a of attempts.values()) {
    if (!a.kind) {
      others.push(a);
      continue;
    }
    attemptCount.set(a.step, (attemptCount.get(a.step) ?? 0) + 1);
    const prev = finalOf.get(a.step);
    if (
      !prev ||
      a.attempt > prev.attempt ||
      (a.attempt === prev.attempt && a.frames[0]!.index > prev.frames[0]!.index)
    )
      finalOf.set(a.step, a);
  }
  const steps = [...finalOf.values()]
    .sort((x, y) => x.step - y.step)
    .map((a) => {
      const s = buildStep(tape, a, attemptCount.get(a.step) ?? 1, firstOfStep, lastOfStep);
      // A reused checkpoint: the effects are the frames of the attempt that staged them.
      const counted = s.staging && s.staging.attempt !== a.attempt;
      const from = counted ? attempts.get(`${a.key}#${s.staging!.attempt}`) : undefined;
      if (counted) s.effects = from ? effectsOf(from) : [];
      return s;
    });
  observations.sort((x, y) => x.seq - y.seq);
  const approvals = approvalReader.list();
  const { booth, workflowSteps } = otherSteps(tape, others, firstOfStep, lastOfStep, outcome, approvals);
  return { file, tape, steps, booth, approvals, workflowSteps, observations, input: agentInput, outcome };
}

/** The final attempt of each activity among `attempts`, as a RecordedActivity, by step. */
function recordedActivities(tape: Tape, attempts: Attempt[]): Map<number, RecordedActivity[]> {
  const final = new Map<string, { a: Attempt; count: number }>();
  for (const a of attempts) {
    const seen = final.get(a.key);
    if (!seen) final.set(a.key, { a, count: 1 });
    else {
      seen.count++;
      if (a.attempt > seen.a.attempt) seen.a = a;
    }
  }
  const byStep = new Map<number, RecordedActivity[]>();
  for (const { a, count } of final.values()) {
    const r: RecordedActivity = {
      activityId: a.activityId,
      activityType: a.type,
      attempts: count,
      startFrame: a.frames[0]!.index,
      input: a.input,
      status: 'unfinished',
      effects: effectsOf(a),
    };
    for (const f of a.frames) {
      const p = f.payload as P;
      if (f.kind === 'activity.complete') {
        r.status = 'completed';
        r.result = p.result === undefined ? null : blobValue(tape, p.result);
      } else if (f.kind === 'activity.error' && p.willRetry !== true) {
        r.status = 'failed';
        r.error = (p.error ?? { name: 'Error', message: 'failed' }) as RecordedError;
      }
    }
    const list = byStep.get(a.step) ?? [];
    list.push(r);
    byStep.set(a.step, list);
  }
  return byStep;
}

function otherSteps(
  tape: Tape,
  attempts: Attempt[],
  firstOfStep: Map<number, number>,
  lastOfStep: Map<number, number>,
  outcome: Timeline['outcome'],
  approvals: RecordedApproval[],
): { booth: BoothStep[]; workflowSteps: number[] } {
  const booth: BoothStep[] = [];
  const workflowSteps: number[] = [];
  // A rejected tool or MCP call's rollback belongs to its tool step, not to an agent's ctx.rollback.
  const rolledBackByApproval = approvalRollbackSteps(approvals);
  for (const [step, acts] of [...recordedActivities(tape, attempts)].sort((x, y) => x[0] - y[0])) {
    if (acts.some((a) => WORKFLOW_STEP_ACTIVITIES.has(a.activityType))) {
      workflowSteps.push(step);
      continue;
    }
    if (rolledBackByApproval.has(step) && !acts.some((a) => a.activityType === 'boothVerify')) continue;
    const b = boothStepOf(
      step,
      acts,
      { first: firstOfStep.get(step)!, last: lastOfStep.get(step)! },
      outcome?.step ?? null,
      (verify) => {
        const e = verify.effects.find((x) => x.kind === 'commit' && x.payload.part === 'verify');
        return e ? { changes: blobValue(tape, e.payload.changes) as BoothChangeSet, frame: e.frame } : null;
      },
    );
    if (b) booth.push(b);
  }
  return { booth, workflowSteps };
}

const NOT_EFFECTS = new Set([
  'llm.request',
  'llm.chunk',
  'llm.response',
  'tool.call',
  'tool.result',
  'activity.error',
  'activity.complete',
  'activity.start',
]);

function effectsOf(a: Attempt): StepEffect[] {
  const out: StepEffect[] = [];
  for (const f of a.frames)
    if (f.kind && !NOT_EFFECTS.has(f.kind))
      out.push({ kind: f.kind, frame: f.index, payload: f.payload as P });
  return out;
}

function buildStep(
  tape: Tape,
  a: Attempt,
  attempts: number,
  firstOfStep: Map<number, number>,
  lastOfStep: Map<number, number>,
): TimelineStep {
  const s: TimelineStep = {
    step: a.step,
    kind: a.kind!,
    activityId: a.activityId,
    ...(a.runId !== undefined ? { runId: a.runId } : {}),
    attempts,
    firstFrame: firstOfStep.get(a.step) ?? a.frames[0]!.index,
    lastFrame: lastOfStep.get(a.step) ?? a.frames.at(-1)!.index,
    requestFrame: a.frames[0]!.index,
    chunks: [],
    cost: null,
    effects: [],
  };
  for (const f of a.frames) {
    const p = f.payload as P;
    switch (f.kind) {
      case 'llm.request': {
        s.requestFrame = f.index;
        const params = (p.params ?? {}) as P;
        const request: RecordedRequest = {
          provider: String(p.provider),
          model: String(p.model),
          messages: resolveMessages(
            tape,
            (p.messages ?? null) as Parameters<typeof resolveMessages>[1],
            messageMemo(tape),
          ),
        };
        for (const k of ['system', 'temperature', 'maxTokens', 'stream'] as const)
          if (params[k] !== undefined) (request as unknown as P)[k] = params[k];
        // Shared across steps like the messages, so the audit compares the tool list once per run.
        if (p.tools !== undefined) request.tools = sharedBlobValue(tape, p.tools) as unknown[];
        s.request = request;
        break;
      }
      case 'llm.chunk':
        s.chunks.push(...chunkEntries(p, tape.blobs));
        break;
      case 'llm.response': {
        const message = blobValue(tape, p.message) as { content?: string; toolCalls?: ToolCall[] };
        const usage = p.usage as LlmResponse['usage'] | undefined;
        s.response = {
          id: String(p.responseId ?? ''),
          provider: p.provider as LlmResponse['provider'],
          model: String(p.model),
          text: message?.content ?? '',
          toolCalls: message?.toolCalls ?? [],
          finishReason: (p.stopReason ?? 'stop') as LlmResponse['finishReason'],
          usage: usage ?? { inputTokens: 0, outputTokens: 0 },
          chunks: typeof p.chunks === 'number' ? p.chunks : 0,
        };
        s.usage = usage;
        s.cost = typeof p.cost === 'number' ? p.cost : null;
        break;
      }
      case 'tool.call':
        s.requestFrame = f.index;
        s.toolName = String(p.toolName);
        s.args = (p.args ?? {}) as Record<string, unknown>;
        break;
      case 'tool.result':
        if (p.isError) s.error = p.error as TimelineStep['error'];
        else s.output = blobValue(tape, p.output);
        if (p.staging && typeof p.staging === 'object') s.staging = p.staging as TimelineStep['staging'];
        break;
      case 'activity.error':
        s.error = (p.error ?? { name: 'Error', message: 'failed' }) as TimelineStep['error'];
        break;
      case 'activity.complete':
      case 'activity.start':
        break;
      default:
        if (f.kind) s.effects.push({ kind: f.kind, frame: f.index, payload: p });
    }
  }
  if (s.kind === 'tool' && s.toolName === undefined && a.input) {
    const i = a.input as P;
    s.toolName = String(i.name);
    s.args = (i.args ?? {}) as Record<string, unknown>;
  }
  return s;
}

/** Which step a frame index falls in, and whether it is that step's first frame. */
export function stepOfFrame(t: Timeline, frameIndex: number): { step: number; first: boolean } | undefined {
  const f = t.tape.frames[frameIndex];
  if (!f || f.kind === 'seal' || f.kind === 'outcome') return undefined;
  const s = t.steps.find((x) => x.step === f.step);
  return { step: f.step, first: s ? s.firstFrame === frameIndex : false };
}
