import type { ModelRequest } from './matching';
import type { TurnReply } from './script';

export interface PlannedToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
  argumentsJson: string;
}

/** A scripted reply resolved to concrete text, ids and token counts, ready for either wire format. */
export interface PlannedReply {
  text: string;
  toolCalls: PlannedToolCall[];
  usage: { input: number; output: number };
  chunkSize: number;
  chunkDelayMs: number;
  firstChunkDelayMs: number;
}

const DEFAULT_CHUNK_SIZE = 16;

/** Roughly what real tokenizers give for English: about four characters a token, never zero. */
export const estimateTokens = (chars: number): number => Math.max(1, Math.ceil(chars / 4));

export function chunkText(text: string, size: number): string[] {
  const pieces: string[] = [];
  // Array.from splits on code points, so a chunk boundary never cuts a surrogate pair in half.
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(''));
  return pieces;
}

export function planReply(
  reply: TurnReply,
  req: ModelRequest,
  toolCallId: (index: number) => string,
): PlannedReply {
  const text = reply.text ?? '';
  const toolCalls = (reply.toolCalls ?? []).map((call, i) => {
    const input = call.arguments ?? {};
    return { id: call.id ?? toolCallId(i), name: call.name, input, argumentsJson: JSON.stringify(input) };
  });
  const outputChars = text.length + toolCalls.reduce((n, c) => n + c.name.length + c.argumentsJson.length, 0);
  return {
    text,
    toolCalls,
    usage: {
      input: reply.usage?.input ?? estimateTokens(req.promptChars),
      output: reply.usage?.output ?? estimateTokens(outputChars),
    },
    chunkSize: reply.chunkSize ?? DEFAULT_CHUNK_SIZE,
    chunkDelayMs: reply.chunkDelayMs ?? 0,
    firstChunkDelayMs: reply.firstChunkDelayMs ?? 0,
  };
}
