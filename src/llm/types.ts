/**
 * Provider-neutral shapes of one model call. Agents speak only these, so the same agent code runs against
 * OpenAI, Anthropic, the local model server or a tape.
 */
export type Provider = 'openai' | 'anthropic';

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface LlmRequest {
  provider: Provider;
  model: string;
  system?: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  temperature?: number;
  maxTokens?: number;
  /** Streams by default: chunks are what the circuit breaker and the recorder watch. */
  stream?: boolean;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'other';

export interface LlmResponse {
  id: string;
  provider: Provider;
  model: string;
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: Usage;
  /** Number of streamed chunks received (0 for a non-streaming call). */
  chunks: number;
}

/** One streamed piece, as the provider sent it, with its arrival offset from the request start. */
export interface StreamChunk {
  index: number;
  offsetMs: number;
  text?: string;
  raw: unknown;
}
