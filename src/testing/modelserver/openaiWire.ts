import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { ModelRequest } from './matching';
import { chunkText, type PlannedReply } from './reply';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Content is a string or a list of parts; only text parts carry anything a script can match on. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is Obj => isObject(p) && p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
}

export interface OpenAIRequest extends ModelRequest {
  includeUsage: boolean;
}

/** Reads a Chat Completions body; a string result is what is wrong with it, for a 400. */
export function parseOpenAIRequest(body: unknown): OpenAIRequest | string {
  if (!isObject(body)) return 'the request body must be a JSON object';
  if (typeof body.model !== 'string' || body.model === '') return 'model is required (a string)';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return 'messages must be a non-empty array';
  let lastUser: string | undefined;
  let toolResult: string | undefined;
  let promptChars = 0;
  for (const m of body.messages) {
    if (!isObject(m)) return 'each message must be an object with a role';
    const text = contentText(m.content);
    promptChars += text.length;
    if (Array.isArray(m.tool_calls))
      for (const c of m.tool_calls)
        if (isObject(c) && isObject(c.function) && typeof c.function.arguments === 'string')
          promptChars += c.function.arguments.length;
    if (m.role === 'user') lastUser = text;
    else if (m.role === 'tool' || m.role === 'function') toolResult = text;
  }
  const streamOptions = body.stream_options;
  return {
    provider: 'openai',
    model: body.model,
    stream: body.stream === true,
    lastUser,
    toolResult,
    promptChars,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
  };
}

const usageOf = (plan: PlannedReply) => ({
  prompt_tokens: plan.usage.input,
  completion_tokens: plan.usage.output,
  total_tokens: plan.usage.input + plan.usage.output,
});

const finishReasonOf = (plan: PlannedReply) => (plan.toolCalls.length ? 'tool_calls' : 'stop');

export function openaiCompletion(
  plan: PlannedReply,
  id: string,
  model: string,
  created: number,
): ChatCompletion {
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          // The real API sends null, not "", when the model only called tools.
          content: plan.text || (plan.toolCalls.length ? null : ''),
          refusal: null,
          annotations: [],
          ...(plan.toolCalls.length
            ? {
                tool_calls: plan.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.argumentsJson },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: finishReasonOf(plan),
      },
    ],
    usage: usageOf(plan),
  };
}

/**
 * The chunks of a streamed completion in the order the real API sends them: role first, then text pieces, then
 * each tool call's header followed by its arguments in pieces, then the finish reason, then usage if asked.
 */
export function openaiChunks(
  plan: PlannedReply,
  id: string,
  model: string,
  created: number,
  includeUsage: boolean,
): ChatCompletionChunk[] {
  // With include_usage the real API puts usage: null on every chunk but the last.
  const base = {
    id,
    object: 'chat.completion.chunk' as const,
    created,
    model,
    ...(includeUsage ? { usage: null } : {}),
  };
  const chunk = (
    delta: ChatCompletionChunk.Choice.Delta,
    finish: ChatCompletionChunk.Choice['finish_reason'] = null,
  ): ChatCompletionChunk => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });

  const chunks: ChatCompletionChunk[] = [
    chunk({ role: 'assistant', content: plan.text ? '' : null, refusal: null }),
  ];
  for (const piece of chunkText(plan.text, plan.chunkSize)) chunks.push(chunk({ content: piece }));
  plan.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of chunkText(call.argumentsJson, plan.chunkSize))
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  chunks.push(chunk({}, finishReasonOf(plan)));
  if (includeUsage) chunks.push({ ...base, choices: [], usage: usageOf(plan) });
  return chunks;
}

export const openaiFrame = (chunk: ChatCompletionChunk): string => `data: ${JSON.stringify(chunk)}\n\n`;
export const OPENAI_DONE_FRAME = 'data: [DONE]\n\n';

function errorType(status: number): string {
  if (status === 401) return 'invalid_api_key';
  if (status === 429) return 'rate_limit_exceeded';
  if (status === 404) return 'not_found_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

/** The body OpenAI sends with an error status; the SDK reads `error.message` into APIError.message. */
export function openaiErrorBody(status: number, message: string, code: string | null = null) {
  return { error: { message, type: errorType(status), param: null, code } };
}
