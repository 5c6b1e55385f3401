/** Following a run live from its tape: typed items, and the AI SDK's UI message stream of them. */
export { FollowOptionsError, RunTapeNotFoundError } from './errors';
export { type FollowRunOptions, type FollowTapeOptions, followRun, followTape } from './followRun';
export type * from './items';
export {
  followRunAsUIMessageStream,
  type JukeboxDataPart,
  type JukeboxUIMessageChunk,
  UIMessageChunker,
} from './uiMessageStream';
