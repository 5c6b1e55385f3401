/** The public API for writing agents: a plain async function of a context, run as a Temporal workflow. */
export * from './approval';
export * from './commit';
export * from './context';
export { AgentTurnLimitError, runToolLoop, type ToolLoopOptions, type ToolLoopResult } from './toolLoop';
