/**
 * Jukebox underneath the frameworks people already use: `wrapOpenAI` / `wrapAnthropic` record an SDK client's
 * calls onto the current run's tape and replay them from a tape; `jukeboxFetch` is the same seam for anything
 * that takes a fetch (the Vercel AI SDK's providers, the recording proxy); `SessionTape` records outside
 * Temporal; `ReplayBook` serves a tape's recorded calls (matching rule in replayBook.ts). docs/integrations.md.
 */
export { recordedOpenAIProvider } from './aiSdk';
export { wrapAnthropic } from './anthropic';
export { MalformedSseError, ReplayTapeError, ReplayUnmatchedError, WireRequestError } from './errors';
export { activitySink, type ChunkRaw, type ExchangeSink } from './exchangeSink';
export { type WrapOptions, wrapOpenAI } from './openai';
export {
  errorBody,
  errorResponse,
  type Fetch,
  type JukeboxFetchOptions,
  jukeboxFetch,
  modelCallOf,
  replayResponse,
} from './recordingFetch';
export { type RecordedCall, ReplayBook, recordedCalls } from './replayBook';
export { type ReplaySource, replayBookOf } from './replaySource';
export { SessionTape, type SessionTapeOptions } from './sessionTape';
export { formatSse, type SseEvent, SseParser } from './sse';
export { describeRequest, providerOfPath, requestFields, requestKey, type WireResponse } from './wire';
