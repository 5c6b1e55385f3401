import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { CallOptions } from './callOptions';
import type { Endpoint } from './endpoints';
import { LlmCallError } from './errors';
import { assembleToolCalls, parseToolArguments } from './toolArguments';
import type { FinishReason, LlmRequest, LlmResponse, ToolCall } from './types';

export function openaiClient(endpoint: Endpoint): OpenAI {
  // Retries belong to Temporal (recorded, visible in history), not to the SDK.
  return new OpenAI({ baseURL: endpoint.baseURL, apiKey: endpoint.apiKey, maxRetries: 0 });
}

function toOpenAIMessages(request: LlmRequest): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (request.system) out.push({ role: 'system', content: request.system });
  for (const m of request.messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'tool') out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
    else
      out.push({
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls?.length
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              })),
            }
          : {}),
      });
  }
  return out;
}

function finishReason(reason: string | null | undefined): FinishReason {
  if (reason === 'stop' || reason === 'tool_calls' || reason === 'length') return reason;
  return 'other';
}

export async function callOpenAI(
  client: OpenAI,
  request: LlmRequest,
  options: CallOptions,
): Promise<LlmResponse> {
  const body = {
    model: request.model,
    messages: toOpenAIMessages(request),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((t) => ({
            type: 'function' as const,
            function: { name: t.name, description: t.description, parameters: t.parameters },
          })),
        }
      : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
  };
  try {
    if (request.stream === false) {
      const res = await client.chat.completions.create(
        { ...body, stream: false },
        { signal: options.signal },
      );
      const choice = res.choices[0];
      const toolCalls: ToolCall[] = (choice?.message.tool_calls ?? []).flatMap((c) =>
        c.type === 'function'
          ? [
              {
                id: c.id,
                name: c.function.name,
                arguments: parseToolArguments('openai', c.function.name, c.function.arguments),
              },
            ]
          : [],
      );
      return {
        id: res.id,
        provider: 'openai',
        model: res.model,
        text: choice?.message.content ?? '',
        toolCalls,
        finishReason: finishReason(choice?.finish_reason),
        usage: {
          inputTokens: res.usage?.prompt_tokens ?? 0,
          outputTokens: res.usage?.completion_tokens ?? 0,
        },
        chunks: 0,
      };
    }
    const stream = await client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal: options.signal },
    );
    return await accumulate(stream, options);
  } catch (err) {
    throw asCallError(err, request);
  }
}

async function accumulate(
  stream: AsyncIterable<ChatCompletionChunk>,
  options: CallOptions,
): Promise<LlmResponse> {
  const started = Date.now();
  let id = '';
  let model = '';
  let text = '';
  let reason: string | null | undefined;
  let usage = { inputTokens: 0, outputTokens: 0 };
  let index = 0;
  const calls = new Map<number, { id: string; name: string; args: string }>();
  for await (const chunk of stream) {
    id ||= chunk.id;
    model ||= chunk.model;
    const choice = chunk.choices[0];
    const piece = choice?.delta.content ?? undefined;
    if (piece) text += piece;
    for (const tc of choice?.delta.tool_calls ?? []) {
      const call = calls.get(tc.index) ?? { id: '', name: '', args: '' };
      if (tc.id) call.id = tc.id;
      if (tc.function?.name) call.name += tc.function.name;
      if (tc.function?.arguments) call.args += tc.function.arguments;
      calls.set(tc.index, call);
    }
    if (choice?.finish_reason) reason = choice.finish_reason;
    if (chunk.usage)
      usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
    options.onChunk?.({ index, offsetMs: Date.now() - started, text: piece, raw: chunk });
    index++;
  }
  const toolCalls = assembleToolCalls('openai', calls);
  return {
    id,
    provider: 'openai',
    model,
    text,
    toolCalls,
    finishReason: finishReason(reason),
    usage,
    chunks: index,
  };
}

function asCallError(err: unknown, request: LlmRequest): unknown {
  if (err instanceof OpenAI.APIError)
    return new LlmCallError('openai', request.model, err.status, err.message, err);
  return err;
}
