import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageParam,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import { requireOptional } from '../errors/optionalDependency';
import type { CallOptions } from './callOptions';
import type { Endpoint } from './endpoints';
import { LlmCallError } from './errors';
import { assembleToolCalls } from './toolArguments';
import type { FinishReason, LlmRequest, LlmResponse, ToolCall } from './types';

/** Anthropic requires max_tokens; this is what a request that does not say gets. */
const DEFAULT_MAX_TOKENS = 1024;

/**
 * The SDK is an optional peer (19 MiB a basic agent on OpenAI-compatible models never loads): it is required when
 * the first Anthropic call is made, and a missing one says what to install.
 */
function anthropicSdk(): typeof Anthropic {
  return requireOptional<{ default: typeof Anthropic }>(
    '@anthropic-ai/sdk',
    'Anthropic model calls (provider: anthropic)',
  ).default;
}

export function anthropicClient(endpoint: Endpoint): Anthropic {
  const Sdk = anthropicSdk();
  // Retries belong to Temporal (recorded, visible in history), not to the SDK.
  return new Sdk({ baseURL: endpoint.baseURL, apiKey: endpoint.apiKey, maxRetries: 0 });
}

/** Anthropic has no tool role: results travel as tool_result blocks of one user turn. */
function toAnthropicMessages(request: LlmRequest): MessageParam[] {
  const out: MessageParam[] = [];
  for (const m of request.messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'assistant') {
      const blocks: ContentBlockParam[] = [];
      if (m.content) blocks.push({ type: 'text', text: m.content });
      for (const c of m.toolCalls ?? [])
        blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
      out.push({ role: 'assistant', content: blocks });
    } else {
      const block = { type: 'tool_result' as const, tool_use_id: m.toolCallId, content: m.content };
      const last = out[out.length - 1];
      if (last?.role === 'user' && Array.isArray(last.content)) last.content.push(block);
      else out.push({ role: 'user', content: [block] });
    }
  }
  return out;
}

function finishReason(reason: string | null | undefined): FinishReason {
  if (reason === 'end_turn' || reason === 'stop_sequence') return 'stop';
  if (reason === 'tool_use') return 'tool_calls';
  if (reason === 'max_tokens') return 'length';
  return 'other';
}

export async function callAnthropic(
  client: Anthropic,
  request: LlmRequest,
  options: CallOptions,
): Promise<LlmResponse> {
  const body = {
    model: request.model,
    max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    messages: toAnthropicMessages(request),
    ...(request.system ? { system: request.system } : {}),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((t) => ({
            name: t.name,
            description: t.description,
            input_schema: { type: 'object' as const, ...t.parameters },
          })),
        }
      : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
  try {
    if (request.stream === false) {
      const res = await client.messages.create({ ...body, stream: false }, { signal: options.signal });
      let text = '';
      const toolCalls: ToolCall[] = [];
      for (const block of res.content) {
        if (block.type === 'text') text += block.text;
        else if (block.type === 'tool_use')
          toolCalls.push({
            id: block.id,
            name: block.name,
            arguments: block.input as Record<string, unknown>,
          });
      }
      return {
        id: res.id,
        provider: 'anthropic',
        model: res.model,
        text,
        toolCalls,
        finishReason: finishReason(res.stop_reason),
        usage: { inputTokens: res.usage.input_tokens, outputTokens: res.usage.output_tokens },
        chunks: 0,
      };
    }
    const stream = await client.messages.create({ ...body, stream: true }, { signal: options.signal });
    return await accumulate(stream, options);
  } catch (err) {
    // The client exists, so the SDK is loaded: this require is a cache lookup.
    if (err instanceof anthropicSdk().APIError)
      throw new LlmCallError('anthropic', request.model, err.status, err.message, err);
    throw err;
  }
}

async function accumulate(
  stream: AsyncIterable<RawMessageStreamEvent>,
  options: CallOptions,
): Promise<LlmResponse> {
  const started = Date.now();
  let id = '';
  let model = '';
  let text = '';
  let reason: string | null | undefined;
  let inputTokens = 0;
  let outputTokens = 0;
  let index = 0;
  const blocks = new Map<number, { id: string; name: string; args: string }>();
  for await (const event of stream) {
    let piece: string | undefined;
    if (event.type === 'message_start') {
      id = event.message.id;
      model = event.message.model;
      inputTokens = event.message.usage.input_tokens;
      outputTokens = event.message.usage.output_tokens;
    } else if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
      blocks.set(event.index, { id: event.content_block.id, name: event.content_block.name, args: '' });
    } else if (event.type === 'content_block_delta') {
      if (event.delta.type === 'text_delta') {
        piece = event.delta.text;
        text += piece;
      } else if (event.delta.type === 'input_json_delta') {
        const block = blocks.get(event.index);
        if (block) block.args += event.delta.partial_json;
      }
    } else if (event.type === 'message_delta') {
      reason = event.delta.stop_reason;
      outputTokens = event.usage.output_tokens;
      if (event.usage.input_tokens) inputTokens = event.usage.input_tokens;
    }
    options.onChunk?.({ index, offsetMs: Date.now() - started, text: piece, raw: event });
    index++;
  }
  const toolCalls = assembleToolCalls('anthropic', blocks);
  return {
    id,
    provider: 'anthropic',
    model,
    text,
    toolCalls,
    finishReason: finishReason(reason),
    usage: { inputTokens, outputTokens },
    chunks: index,
  };
}
