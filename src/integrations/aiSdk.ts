/**
 * The Vercel AI SDK through Jukebox: an `@ai-sdk/openai` provider whose fetch is the Jukebox fetch, so
 * `generateText` / `streamText` calls are recorded (inside an activity, or to a sink) and replayed from a tape.
 * Use its `.chat(model)` models: they speak Chat Completions, which the tape, the proxy and the local model
 * server all understand.
 */
import type { OpenAIProviderSettings } from '@ai-sdk/openai';
import { requireOptional } from '../errors/optionalDependency';
import type { WrapOptions } from './openai';
import { jukeboxFetch } from './recordingFetch';
import { replayBookOf } from './replaySource';

export function recordedOpenAIProvider(settings: OpenAIProviderSettings = {}, options: WrapOptions = {}) {
  const fetch = jukeboxFetch({
    replay: replayBookOf(options.replay),
    sink: options.sink,
    fetch: options.fetch,
  });
  const { createOpenAI } = requireOptional<typeof import('@ai-sdk/openai')>(
    '@ai-sdk/openai',
    'recordedOpenAIProvider (the Vercel AI SDK integration)',
  );
  return createOpenAI({ ...settings, fetch: fetch as typeof globalThis.fetch });
}
