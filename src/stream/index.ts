/** Following a run live from its tape: typed items, and the AI SDK's UI message stream of them. */
export { FollowOptionsError, RunTapeNotFoundError } from './errors';
export { type FollowRunOptions, followRun } from './followRun';
export type * from './items';
