/**
 * A tape as GenAI telemetry after the fact: one `invoke_agent {agent}` root span for the run, a `chat {model}`
 * span per model-step attempt and an `execute_tool {tool}` span per tool-step attempt, timed by the frames'
 * recordedAt, plus the two client metrics aggregated over the run. Ids derive from the tape id, so exporting
 * the same tape twice names the same spans (a backend deduplicates instead of showing the run twice).
 */
import { createHash } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import type { Redactor } from '../../recorder/redact';
import { derefValue, type Tape, type TapeFrame } from '../../recorder/tape';
import { chatContentAttributes, toolContentAttributes } from '../content';
import {
  APPROVAL_EVENT,
  ATTR,
  agentSpanName,
  chatSpanName,
  LLM_STEP_ACTIVITY,
  TOOL_STEP_ACTIVITY,
  toolSpanName,
} from '../conventions';
import {
  agentAttributes,
  chatRequestAttributes,
  chatResponseAttributes,
  metricAttributes,
  stepAttributes,
  toolAttributes,
} from '../genAiAttributes';
import { ConversationContent } from './conversationContent';

export type SpanKindName = 'INTERNAL' | 'CLIENT';
export type StatusName = 'UNSET' | 'OK' | 'ERROR';

export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: SpanKindName;
  startUs: number;
  endUs: number;
  attributes: Attributes;
  status: { code: StatusName; message?: string };
  /** Point-in-time events on the span: a person's approvals on the run's span. */
  events?: SpanEvent[];
}

export interface SpanEvent {
  name: string;
  timeUs: number;
  attributes: Attributes;
}

function approvalEvent(f: TapeFrame): SpanEvent {
  const p = (f.payload ?? {}) as Payload;
  const attributes: Attributes = {
    'jukebox.approval.id': String(p.id),
    'jukebox.approval.event': String(p.event),
    'jukebox.approval.kind': String(p.kind ?? 'commit'),
    [ATTR.step]: f.step,
  };
  const text = (key: string, value: unknown) => {
    if (typeof value === 'string') attributes[key] = value;
  };
  if (p.event === 'request') {
    text('jukebox.approval.reason', p.reason);
    text('jukebox.approval.on_timeout', p.onTimeout);
    if (typeof p.deadlineMs === 'number') attributes['jukebox.approval.deadline_ms'] = p.deadlineMs;
  } else if (p.event === 'timeout') {
    attributes['jukebox.approval.outcome'] = 'timedOut';
    text('jukebox.approval.on_timeout', p.onTimeout);
  } else {
    attributes['jukebox.approval.outcome'] = p.verdict === 'approve' ? 'approved' : 'rejected';
    text('jukebox.approval.by', p.by);
    text('jukebox.approval.note', p.note);
    text('jukebox.approval.via', p.via);
    if (typeof p.atMs === 'number') attributes['jukebox.approval.at_ms'] = p.atMs;
  }
  return { name: APPROVAL_EVENT, timeUs: f.recordedAtUs, attributes };
}

/** One chat call's measurements, for the metrics. */
export interface ChatMeasurement {
  attributes: Attributes;
  durationS: number;
  inputTokens?: number;
  outputTokens?: number;
}

export interface TapeTelemetry {
  tapeId: string;
  traceId: string;
  startUs: number;
  endUs: number;
  spans: ExportedSpan[];
  chats: ChatMeasurement[];
}

export interface TapeTelemetryOptions {
  /** Put message content on the spans (redacted again: tapes are redacted when recorded). */
  captureContent?: boolean;
  redactor: Redactor;
}

interface ExportContext extends TapeTelemetryOptions {
  conversations?: ConversationContent;
}

type Payload = Record<string, unknown>;

/** The frames of one activity attempt, in tape order. */
interface Attempt {
  key: string;
  activityId: string;
  attempt: number;
  step: number;
  activityType: string;
  frames: TapeFrame[];
}

const hashHex = (s: string, bytes: number) =>
  createHash('sha256')
    .update(s)
    .digest('hex')
    .slice(0, bytes * 2);

function groupAttempts(tape: Tape): Attempt[] {
  const attempts = new Map<string, Attempt>();
  for (const f of tape.frames) {
    if (f.kind === 'blob' || f.kind === 'seal') continue;
    const p = f.payload as Payload | null;
    if (!p || typeof p.activityId !== 'string' || typeof p.attempt !== 'number') continue;
    // Identity fields are only on some frames, and only differ from the header's for child runs.
    const wf = p.workflowId !== undefined && p.workflowId !== tape.header.workflowId ? p.workflowId : '';
    const run = p.runId !== undefined && p.runId !== tape.header.runId ? p.runId : '';
    const key = `${wf}/${run}/${p.activityId}#${p.attempt}`;
    let a = attempts.get(key);
    if (!a) {
      a = { key, activityId: p.activityId, attempt: p.attempt, step: f.step, activityType: '', frames: [] };
      attempts.set(key, a);
    }
    if (f.kind === 'activity.start') a.activityType = String(p.activityType ?? '');
    a.frames.push(f);
  }
  return [...attempts.values()];
}

const find = (a: Attempt, kind: string) => a.frames.find((f) => f.kind === kind);
const payloadOf = (f: TapeFrame | undefined) => (f?.payload ?? {}) as Payload;

function failure(a: Attempt): { status: ExportedSpan['status']; errorType?: string } {
  const err = find(a, 'activity.error');
  if (!err) return { status: { code: 'OK' } };
  const e = (payloadOf(err).error ?? {}) as Payload;
  const type = [e.code, e.type, e.name].find((x) => typeof x === 'string' && x) as string | undefined;
  return {
    status: { code: 'ERROR', message: String(e.message ?? 'step failed') },
    errorType: type ?? '_OTHER',
  };
}

function chatSpan(tape: Tape, a: Attempt, ids: SpanIds, options: ExportContext) {
  const reqFrame = find(a, 'llm.request');
  if (!reqFrame) return undefined;
  const req = payloadOf(reqFrame);
  const params = (req.params ?? {}) as Payload;
  const resFrame = find(a, 'llm.response');
  const res = payloadOf(resFrame);
  const endFrame = resFrame ?? find(a, 'activity.error') ?? a.frames[a.frames.length - 1]!;
  const { status, errorType } = failure(a);
  const model = String(req.model ?? 'unknown');
  const usage = res.usage as { inputTokens?: number; outputTokens?: number } | undefined;
  const attributes: Attributes = {
    ...chatRequestAttributes({
      provider: String(req.provider ?? 'unknown'),
      model,
      temperature: params.temperature as number | undefined,
      maxTokens: params.maxTokens as number | undefined,
    }),
    ...stepAttributes({
      step: a.step,
      attempt: a.attempt,
      activityId: a.activityId,
      workflowId: tape.header.workflowId,
    }),
    ...(resFrame
      ? chatResponseAttributes({
          id: res.responseId as string | undefined,
          model: res.model as string | undefined,
          finishReason: res.stopReason as string | undefined,
          usage,
          cost: res.cost as number | null | undefined,
        })
      : {}),
  };
  if (errorType) attributes[ATTR.errorType] = errorType;
  if (options.captureContent) {
    const message = resFrame ? (derefValue(tape, res.message) as Payload | undefined) : undefined;
    Object.assign(
      attributes,
      chatContentAttributes(
        {
          system: params.system as string | undefined,
          messages: [],
          inputJson: options.conversations?.inputJson(req.messages ?? null),
          output: message
            ? {
                text: String(message.content ?? ''),
                toolCalls: message.toolCalls as unknown[] | undefined,
                finishReason: res.stopReason as string | undefined,
              }
            : undefined,
        },
        options.redactor,
      ),
    );
  }
  const span: ExportedSpan = {
    ...ids.child(a.key),
    name: chatSpanName(model),
    kind: 'CLIENT',
    startUs: reqFrame.recordedAtUs,
    endUs: Math.max(endFrame.recordedAtUs, reqFrame.recordedAtUs),
    attributes,
    status,
  };
  const chat: ChatMeasurement = {
    attributes: metricAttributes(attributes),
    durationS: (span.endUs - span.startUs) / 1e6,
    ...(usage ? { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens } : {}),
  };
  return { span, chat };
}

function toolSpan(
  tape: Tape,
  a: Attempt,
  ids: SpanIds,
  options: TapeTelemetryOptions,
): ExportedSpan | undefined {
  const callFrame = find(a, 'tool.call');
  if (!callFrame) return undefined;
  const call = payloadOf(callFrame);
  const resultFrame = find(a, 'tool.result');
  const result = payloadOf(resultFrame);
  const endFrame = resultFrame ?? find(a, 'activity.error') ?? a.frames[a.frames.length - 1]!;
  const toolName = String(call.toolName ?? 'unknown');
  const { status, errorType } = failure(a);
  const attributes: Attributes = {
    ...toolAttributes(toolName, call.callId as string | undefined),
    ...stepAttributes({
      step: a.step,
      attempt: a.attempt,
      activityId: a.activityId,
      workflowId: tape.header.workflowId,
    }),
  };
  if (errorType) attributes[ATTR.errorType] = errorType;
  if (options.captureContent) {
    const output = result.isError ? undefined : derefValue(tape, result.output);
    Object.assign(attributes, toolContentAttributes(call.args, output, options.redactor));
  }
  return {
    ...ids.child(a.key),
    name: toolSpanName(toolName),
    kind: 'INTERNAL',
    startUs: callFrame.recordedAtUs,
    endUs: Math.max(endFrame.recordedAtUs, callFrame.recordedAtUs),
    attributes,
    status,
  };
}

class SpanIds {
  readonly traceId: string;
  readonly rootSpanId: string;
  constructor(private readonly tapeId: string) {
    this.traceId = hashHex(`trace|${tapeId}`, 16);
    this.rootSpanId = hashHex(`span|${tapeId}|invoke_agent`, 8);
  }
  child(key: string) {
    return {
      traceId: this.traceId,
      spanId: hashHex(`span|${this.tapeId}|${key}`, 8),
      parentSpanId: this.rootSpanId,
    };
  }
}

export function tapeTelemetry(tape: Tape, tapeOptions: TapeTelemetryOptions): TapeTelemetry {
  const { header } = tape;
  const options: ExportContext = tapeOptions.captureContent
    ? { ...tapeOptions, conversations: new ConversationContent(tape, tapeOptions.redactor) }
    : tapeOptions;
  const ids = new SpanIds(header.tapeId);
  const spans: ExportedSpan[] = [];
  const chats: ChatMeasurement[] = [];
  let inputTokens = 0;
  let outputTokens = 0;
  let provider: unknown;
  let model: unknown;
  for (const a of groupAttempts(tape)) {
    if (a.activityType === LLM_STEP_ACTIVITY || (!a.activityType && find(a, 'llm.request'))) {
      const c = chatSpan(tape, a, ids, options);
      if (!c) continue;
      spans.push(c.span);
      chats.push(c.chat);
      inputTokens += c.chat.inputTokens ?? 0;
      outputTokens += c.chat.outputTokens ?? 0;
      provider ??= c.span.attributes[ATTR.providerName];
      model ??= c.span.attributes[ATTR.requestModel];
    } else if (a.activityType === TOOL_STEP_ACTIVITY || (!a.activityType && find(a, 'tool.call'))) {
      const t = toolSpan(tape, a, ids, options);
      if (t) spans.push(t);
    }
  }
  const frames = tape.frames;
  // Frames buffered before the tape file existed carry earlier times than its header.
  let startUs = header.createdAtMs * 1000;
  let lastUs = startUs;
  for (const f of frames) {
    if (f.recordedAtUs < startUs) startUs = f.recordedAtUs;
    if (f.recordedAtUs > lastUs) lastUs = f.recordedAtUs;
  }
  const outcome = (tape.outcome ?? null) as Payload | null;
  const attributes: Attributes = {
    ...agentAttributes(header.workflowType, header.workflowId, header.runId),
    [ATTR.tapeId]: header.tapeId,
    [ATTR.usageInputTokens]: inputTokens,
    [ATTR.usageOutputTokens]: outputTokens,
  };
  if (typeof provider === 'string') attributes[ATTR.providerName] = provider;
  if (typeof model === 'string') attributes[ATTR.requestModel] = model;
  let status: ExportedSpan['status'] = { code: 'UNSET' };
  if (outcome?.status === 'completed') status = { code: 'OK' };
  else if (outcome) {
    const err = (outcome.error ?? {}) as Payload;
    status = { code: 'ERROR', message: String(err.message ?? outcome.status) };
    attributes[ATTR.errorType] = String(err.code ?? err.type ?? err.name ?? outcome.status);
  }
  const events = frames.filter((f) => f.kind === 'approval').map(approvalEvent);
  spans.unshift({
    traceId: ids.traceId,
    spanId: ids.rootSpanId,
    name: agentSpanName(header.workflowType || 'agent'),
    kind: 'INTERNAL',
    startUs,
    endUs: lastUs,
    attributes,
    status,
    ...(events.length ? { events } : {}),
  });
  return { tapeId: header.tapeId, traceId: ids.traceId, startUs, endUs: lastUs, spans, chats };
}
