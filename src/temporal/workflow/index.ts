/**
 * `jukebox/workflow`: what a workflows module and agent code import. Everything here runs inside Temporal's
 * workflow sandbox, so nothing in its import closure touches a Node module (a lint rule and a bundling test
 * hold it to that). Export `agentWorkflow(yourAgent)` from your workflows module; the worker's JukeboxPlugin
 * supplies the activities behind each step.
 */
export * from '../../agent';
export type { ChatMessage, LlmRequest, LlmResponse, Provider, ToolSpec } from '../../llm/types';
export {
  type AgentGroupInput,
  type AgentGroupResult,
  agentGroupWorkflow,
  type GroupMessage,
  type GroupTrack,
  groupMessageSignal,
} from './agentGroupWorkflow';
export { agentWorkflow, progressQuery } from './agentWorkflow';
export {
  type BreakerDecision,
  type BreakerStatus,
  breakerCloseSignal,
  breakerStatusQuery,
} from './breakerSignals';
export type { AgentRunOptions } from './runOptions';
