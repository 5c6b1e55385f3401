/**
 * Message content as the GenAI conventions' `gen_ai.input.messages` / `gen_ai.output.messages` JSON (role plus
 * typed parts), only when an operator opted in, and always through the recorder's Redactor first: span
 * attributes leave the machine for a tracing backend.
 */
import type { Attributes } from '@opentelemetry/api';
import type { Redactor } from '../recorder/redact';
import { toTapeValue } from '../recorder/tapeValue';
import { ATTR } from './conventions';

type Part =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: string };

interface GenAiMessage {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

interface LooseToolCall {
  id?: unknown;
  name?: unknown;
  arguments?: unknown;
}

/** Accepts the shapes of src/llm/types ChatMessage, as live requests and tape message blobs both hold them. */
function toGenAiMessage(m: unknown): GenAiMessage {
  const msg = (m ?? {}) as Record<string, unknown>;
  const role = typeof msg.role === 'string' ? msg.role : 'user';
  const content = typeof msg.content === 'string' ? msg.content : JSON.stringify(msg.content ?? '');
  if (role === 'tool')
    return {
      role: 'tool',
      parts: [{ type: 'tool_call_response', id: String(msg.toolCallId ?? ''), response: content }],
    };
  const parts: Part[] = content ? [{ type: 'text', content }] : [];
  for (const c of (Array.isArray(msg.toolCalls) ? msg.toolCalls : []) as LooseToolCall[])
    parts.push({
      type: 'tool_call',
      id: String(c.id ?? ''),
      name: String(c.name ?? ''),
      arguments: c.arguments,
    });
  return { role, parts };
}

export interface ChatContent {
  system?: string;
  messages: readonly unknown[];
  /** The input messages already as gen_ai JSON (the tape exporter builds it incrementally); wins over `messages`. */
  inputJson?: string;
  output?: { text: string; toolCalls?: unknown[]; finishReason?: string };
}

/** One message as its redacted gen_ai JSON; `[` + these joined by `,` + `]` is `gen_ai.input.messages`. */
export function genAiMessageJson(m: unknown, redactor: Redactor): string {
  return JSON.stringify(toTapeValue(toGenAiMessage(m), redactor));
}

export function chatContentAttributes(c: ChatContent, redactor: Redactor): Attributes {
  const clean = (v: unknown) => JSON.stringify(toTapeValue(v, redactor));
  const input = c.inputJson ?? `[${c.messages.map((m) => genAiMessageJson(m, redactor)).join(',')}]`;
  const a: Attributes = { [ATTR.inputMessages]: input };
  if (c.system) a[ATTR.systemInstructions] = clean([{ type: 'text', content: c.system }]);
  if (c.output) {
    const out = toGenAiMessage({ role: 'assistant', content: c.output.text, toolCalls: c.output.toolCalls });
    if (c.output.finishReason) out.finish_reason = c.output.finishReason;
    a[ATTR.outputMessages] = clean([out]);
  }
  return a;
}

export function toolContentAttributes(args: unknown, result: unknown, redactor: Redactor): Attributes {
  const a: Attributes = { [ATTR.toolCallArguments]: JSON.stringify(toTapeValue(args, redactor) ?? null) };
  if (result !== undefined) a[ATTR.toolCallResult] = JSON.stringify(toTapeValue(result, redactor) ?? null);
  return a;
}
