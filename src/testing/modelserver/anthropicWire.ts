import type {
  ContentBlock,
  Message,
  MessageDeltaUsage,
  RawMessageStreamEvent,
  Usage,
} from '@anthropic-ai/sdk/resources/messages';
import type { ModelRequest } from './matching';
import { chunkText, type PlannedReply } from './reply';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function blocksText(content: unknown, type = 'text'): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b): b is Obj => isObject(b) && b.type === type && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');
}

/** Reads a Messages body; a string result is what is wrong with it, for a 400. */
export function parseAnthropicRequest(body: unknown): ModelRequest | string {
  if (!isObject(body)) return 'the request body must be a JSON object';
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required (a string)';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return 'messages: must be a non-empty array';
  let lastUser: string | undefined;
  let toolResult: string | undefined;
  let promptChars = blocksText(body.system).length;
  for (const m of body.messages) {
    if (!isObject(m)) return 'messages: each message must be an object with a role';
    const content = m.content;
    promptChars += blocksText(content).length;
    // Tool results travel inside user messages; a user message holding only tool results is not the user
    // speaking, so lastUser means the same thing here as it does for OpenAI.
    const hasText = typeof content === 'string' || (Array.isArray(content) && blocksText(content) !== '');
    if (m.role === 'user' && hasText) lastUser = blocksText(content);
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block.type === 'tool_result') {
        toolResult = blocksText(block.content);
        promptChars += toolResult.length;
      } else if (block.type === 'tool_use') promptChars += JSON.stringify(block.input ?? {}).length;
    }
  }
  return {
    provider: 'anthropic',
    model: body.model,
    stream: body.stream === true,
    lastUser,
    toolResult,
    promptChars,
  };
}

const stopReasonOf = (plan: PlannedReply) => (plan.toolCalls.length ? 'tool_use' : 'end_turn');

function usageOf(input: number, output: number): Usage {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: null,
    inference_geo: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: 'standard',
    speed: null,
  };
}

function contentOf(plan: PlannedReply): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (plan.text) blocks.push({ type: 'text', text: plan.text, citations: null });
  for (const c of plan.toolCalls)
    blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input, caller: { type: 'direct' } });
  return blocks;
}

function messageOf(
  plan: PlannedReply,
  id: string,
  model: string,
  content: ContentBlock[],
  done: boolean,
): Message {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: done ? stopReasonOf(plan) : null,
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    // While streaming, message_start carries the input count and a placeholder output count, as the API does.
    usage: usageOf(plan.usage.input, done ? plan.usage.output : 1),
  };
}

export const anthropicMessage = (plan: PlannedReply, id: string, model: string): Message =>
  messageOf(plan, id, model, contentOf(plan), true);

export type AnthropicFrame = RawMessageStreamEvent | { type: 'ping' };

/**
 * The events of a streamed message in the real API's order: message_start, then per content block a start,
 * deltas (text_delta, or input_json_delta pieces of the tool input) and a stop, then message_delta with the stop
 * reason and final output count, then message_stop. A ping follows the first block start, as it does live.
 */
export function anthropicEvents(plan: PlannedReply, id: string, model: string): AnthropicFrame[] {
  const events: AnthropicFrame[] = [
    { type: 'message_start', message: messageOf(plan, id, model, [], false) },
  ];
  let index = 0;
  const ping = () => {
    if (index === 0) events.push({ type: 'ping' });
  };
  if (plan.text) {
    events.push({
      type: 'content_block_start',
      index,
      content_block: { type: 'text', text: '', citations: null },
    });
    ping();
    for (const text of chunkText(plan.text, plan.chunkSize))
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  for (const call of plan.toolCalls) {
    events.push({
      type: 'content_block_start',
      index,
      content_block: {
        type: 'tool_use',
        id: call.id,
        name: call.name,
        input: {},
        caller: { type: 'direct' },
      },
    });
    ping();
    for (const partial_json of chunkText(call.argumentsJson, plan.chunkSize))
      events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  const usage: MessageDeltaUsage = {
    input_tokens: plan.usage.input,
    output_tokens: plan.usage.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens_details: null,
    server_tool_use: null,
  };
  events.push({
    type: 'message_delta',
    delta: { stop_reason: stopReasonOf(plan), stop_sequence: null, stop_details: null, container: null },
    usage,
  });
  events.push({ type: 'message_stop' });
  return events;
}

export const anthropicFrame = (event: AnthropicFrame): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

function errorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    529: 'overloaded_error',
  };
  return byStatus[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** The body Anthropic sends with an error status; the SDK exposes `error.message` as APIError.apiMessage. */
export function anthropicErrorBody(status: number, message: string, requestId: string) {
  return { type: 'error', error: { type: errorType(status), message }, request_id: requestId };
}
