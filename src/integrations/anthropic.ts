/** Recording and replay for an `@anthropic-ai/sdk` client, like wrapOpenAI. */
import type Anthropic from '@anthropic-ai/sdk';
import type { WrapOptions } from './openai';
import { jukeboxFetch } from './recordingFetch';
import { replayBookOf } from './replaySource';

export function wrapAnthropic<T extends Anthropic>(client: T, options: WrapOptions = {}): T {
  const replay = replayBookOf(options.replay);
  return client.withOptions({
    fetch: jukeboxFetch({ replay, sink: options.sink, fetch: options.fetch }),
    ...(replay ? { maxRetries: 0 } : {}),
  }) as T;
}
