/**
 * One model call at the HTTP level, provider by provider: which routes are model calls, the canonical form of
 * a request that replay matches on, and the neutral summary (text, tool calls, usage) a tape's llm.response
 * frame holds. Recording works on the wire so that replay can hand an SDK exactly the bytes it got live.
 */
import type { FinishReason, LlmResponse, Provider, ToolCall } from '../llm/types';
import { Redactor, toTapeValue } from '../recorder';
import { eventJson, type SseEvent } from './sse';

/** What an upstream answered: a JSON body, or an event stream with each event's arrival offset. */
export type WireResponse =
  | { kind: 'json'; status: number; contentType: string; body: string }
  | { kind: 'sse'; status: number; events: (SseEvent & { offsetMs: number })[] };

/** The model routes, as the SDKs call them (a base URL may add a prefix before `/v1`). */
export function providerOfPath(pathname: string): Provider | undefined {
  if (/\/chat\/completions\/?$/.test(pathname)) return 'openai';
  if (/\/messages\/?$/.test(pathname)) return 'anthropic';
  return undefined;
}

/** The request fields a tape's llm.request frame keeps, in the recorder's neutral names. */
export interface WireRequestFields {
  provider: Provider;
  model: string;
  system?: unknown;
  messages: unknown[];
  tools?: unknown[];
  temperature?: number;
  maxTokens?: number;
  stream?: boolean;
}

export function requestFields(provider: Provider, body: Record<string, unknown>): WireRequestFields {
  const f: WireRequestFields = {
    provider,
    model: String(body.model ?? ''),
    messages: Array.isArray(body.messages) ? body.messages : [],
  };
  if (provider === 'anthropic' && body.system !== undefined) f.system = body.system;
  if (Array.isArray(body.tools) && body.tools.length) f.tools = body.tools;
  if (typeof body.temperature === 'number') f.temperature = body.temperature;
  const max = body.max_tokens ?? body.max_completion_tokens;
  if (typeof max === 'number') f.maxTokens = max;
  if (body.stream === true) f.stream = true;
  return f;
}

const keyRedactor = new Redactor();

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

/**
 * The matching key: the fields above, in their tape form (secrets redacted, undefined dropped) and canonical
 * JSON. Computed from the live request and from the tape the same way, so equal requests give equal keys.
 */
export function requestKey(f: WireRequestFields): string {
  return canonicalJson(toTapeValue({ ...f, stream: f.stream === true }, keyRedactor));
}

/** What a person needs to recognise a request in an error: model, stream, message count, last user text. */
export function describeRequest(f: WireRequestFields): Record<string, unknown> {
  const last = [...f.messages].reverse().find((m) => (m as { role?: string })?.role === 'user') as
    | { content?: unknown }
    | undefined;
  const content = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
  return {
    provider: f.provider,
    model: f.model,
    stream: f.stream === true,
    messages: f.messages.length,
    lastUser: content.length > 120 ? `${content.slice(0, 117)}...` : content,
  };
}

// Wire JSON of two vendors' APIs, read defensively field by field: typing every shape would add nothing.
// biome-ignore lint/suspicious/noExplicitAny: see above
type Json = Record<string, any>;

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_calls: 'tool_calls',
  tool_use: 'tool_calls',
  length: 'length',
  max_tokens: 'length',
};

function parseArgs(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
  } catch {
    return { raw: text };
  }
}

/** Text of one event, if it carries text: what the tape's llm.chunk entry shows as its delta. */
export function eventText(provider: Provider, e: SseEvent): string | undefined {
  if (e.data === '[DONE]') return undefined;
  const d = eventJson(e) as Json;
  const t = provider === 'openai' ? d.choices?.[0]?.delta?.content : d.delta?.text;
  return typeof t === 'string' && t.length > 0 ? t : undefined;
}

/** The neutral summary of an answer, for the llm.response frame. */
export function summarizeResponse(provider: Provider, r: WireResponse, fallbackModel: string): LlmResponse {
  const out: LlmResponse = {
    id: '',
    provider,
    model: fallbackModel,
    text: '',
    toolCalls: [],
    finishReason: 'other',
    usage: { inputTokens: 0, outputTokens: 0 },
    chunks: r.kind === 'sse' ? r.events.length : 0,
  };
  if (r.kind === 'json') {
    let d: Json;
    try {
      d = JSON.parse(r.body) as Json;
    } catch {
      return out;
    }
    out.id = String(d.id ?? '');
    out.model = String(d.model ?? fallbackModel);
    if (provider === 'openai') {
      const m = d.choices?.[0]?.message ?? {};
      out.text = typeof m.content === 'string' ? m.content : '';
      out.toolCalls = (m.tool_calls ?? []).map((c: Json) => ({
        id: String(c.id),
        name: String(c.function?.name),
        arguments: parseArgs(c.function?.arguments ?? ''),
      }));
      out.finishReason = FINISH[d.choices?.[0]?.finish_reason] ?? 'other';
      out.usage = { inputTokens: d.usage?.prompt_tokens ?? 0, outputTokens: d.usage?.completion_tokens ?? 0 };
    } else {
      for (const b of d.content ?? []) {
        if (b.type === 'text') out.text += b.text;
        if (b.type === 'tool_use') out.toolCalls.push({ id: b.id, name: b.name, arguments: b.input ?? {} });
      }
      out.finishReason = FINISH[d.stop_reason] ?? 'other';
      out.usage = { inputTokens: d.usage?.input_tokens ?? 0, outputTokens: d.usage?.output_tokens ?? 0 };
    }
    return out;
  }
  const calls = new Map<number, { id: string; name: string; args: string }>();
  for (const e of r.events) {
    if (e.data === '[DONE]') continue;
    const d = eventJson(e) as Json;
    if (provider === 'openai') {
      if (d.id) out.id = String(d.id);
      if (d.model) out.model = String(d.model);
      const c = d.choices?.[0];
      if (typeof c?.delta?.content === 'string') out.text += c.delta.content;
      for (const t of c?.delta?.tool_calls ?? []) {
        const call = calls.get(t.index) ?? { id: '', name: '', args: '' };
        if (t.id) call.id = t.id;
        if (t.function?.name) call.name = t.function.name;
        if (t.function?.arguments) call.args += t.function.arguments;
        calls.set(t.index, call);
      }
      if (c?.finish_reason) out.finishReason = FINISH[c.finish_reason] ?? 'other';
      if (d.usage)
        out.usage = { inputTokens: d.usage.prompt_tokens ?? 0, outputTokens: d.usage.completion_tokens ?? 0 };
    } else if (d.type === 'message_start') {
      out.id = String(d.message?.id ?? '');
      out.model = String(d.message?.model ?? fallbackModel);
      out.usage.inputTokens = d.message?.usage?.input_tokens ?? 0;
    } else if (d.type === 'content_block_start' && d.content_block?.type === 'tool_use') {
      calls.set(d.index, { id: d.content_block.id, name: d.content_block.name, args: '' });
    } else if (d.type === 'content_block_delta') {
      if (d.delta?.type === 'text_delta') out.text += d.delta.text;
      if (d.delta?.type === 'input_json_delta') {
        const call = calls.get(d.index);
        if (call) call.args += d.delta.partial_json;
      }
    } else if (d.type === 'message_delta') {
      if (d.delta?.stop_reason) out.finishReason = FINISH[d.delta.stop_reason] ?? 'other';
      if (d.usage?.output_tokens !== undefined) out.usage.outputTokens = d.usage.output_tokens;
    }
  }
  out.toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, c]): ToolCall => ({ id: c.id, name: c.name, arguments: parseArgs(c.args) }));
  return out;
}
