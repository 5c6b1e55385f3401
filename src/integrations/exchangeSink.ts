/**
 * Where a recorded model call goes. Every chunk is kept as its exact wire form (`raw`): an SSE event, or the
 * whole JSON body of a non-streamed answer, so replay gives an SDK the bytes it got live. Two sinks: the
 * activity's step (inside a Jukebox activity) and a standalone session tape (the proxy, or outside Temporal).
 */
import type { LlmRequest, LlmResponse } from '../llm/types';
import { type ActivityTape, currentActivityTape } from '../recorder';
import type { WireRequestFields } from './wire';

/** A chunk's wire form: one SSE event, or a whole non-streamed body with its status. */
export type ChunkRaw =
  | { event?: string; data: string }
  | { body: string; contentType: string; status: number };

export interface ExchangeSink {
  /** Before any I/O, so a crash still leaves what was asked on the tape. */
  request(fields: WireRequestFields, route: string): Promise<void>;
  chunk(index: number, offsetMs: number, raw: ChunkRaw, text: string | undefined): void;
  response(summary: LlmResponse, status: number): Promise<void>;
  /** The answer broke off (malformed stream): what arrived is kept, and the call is marked unanswered. */
  failed(error: { code: string; message: string }): Promise<void>;
}

/**
 * The recorder's step API keeps raw events only for chunks without text, so every chunk is handed over as a
 * raw event (its text stays readable inside `data`, and in the llm.response message).
 */
export function activitySink(
  tape: ActivityTape | undefined = currentActivityTape(),
): ExchangeSink | undefined {
  if (!tape) return undefined;
  return {
    request: (fields) => tape.llmRequest(fields as unknown as LlmRequest),
    chunk: (index, offsetMs, raw) => tape.llmChunk({ index, offsetMs, raw }),
    response: async (summary) => tape.llmResponse(summary),
    // The step itself fails with the error, and the recorder writes its activity.error.
    failed: async () => {},
  };
}
