/** Recording and replay for an `openai` client: the same client type, its requests through the Jukebox fetch. */
import type OpenAI from 'openai';
import type { ExchangeSink } from './exchangeSink';
import { type Fetch, jukeboxFetch } from './recordingFetch';
import { type ReplaySource, replayBookOf } from './replaySource';

export interface WrapOptions {
  /** Answer every model call from this tape; no request reaches the network. */
  replay?: ReplaySource;
  /** Record outside an activity too (e.g. `() => sessionTape.begin()`); inside one, its step is the default. */
  sink?: () => ExchangeSink | undefined;
  /** The network fetch to record through (default: the global fetch). */
  fetch?: Fetch;
}

/**
 * Inside a Jukebox activity every chat completion (streamed or not, tool calls included) is recorded onto the
 * run's tape as that step's llm.request / llm.chunk / llm.response frames; with `replay` it is answered from a
 * tape. Streams yield the same chunks the SDK parses live, because the tape holds the events as received.
 */
export function wrapOpenAI<T extends OpenAI>(client: T, options: WrapOptions = {}): T {
  const replay = replayBookOf(options.replay);
  return client.withOptions({
    fetch: jukeboxFetch({ replay, sink: options.sink, fetch: options.fetch }),
    // A replayed answer is final: retrying an unmatched request cannot make it match.
    ...(replay ? { maxRetries: 0 } : {}),
  }) as T;
}
