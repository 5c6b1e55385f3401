/**
 * `jukebox`: what an application imports on the worker and client side. Agents are defined with
 * `defineAgent` (workflow code imports it from `jukebox/workflow`, which also has `agentWorkflow`); a worker
 * gets Jukebox from `new JukeboxPlugin({ tools })` in its `plugins`; a client starts runs with `startAgent`.
 * Other entries: `jukebox/booth` (the Shadow Booth), `jukebox/tape` (the .jbx format, no Temporal),
 * `jukebox/testing` (the scripted model server and offline replay for tests).
 */

export * from './agent';
export { formatStep, printStep } from './agent/printStep';
export {
  requireString,
  ToolArgumentsError,
  type ToolDefinition,
  type ToolInvocation,
  ToolNotFoundError,
  type ToolPolicy,
  ToolPolicyError,
  ToolRegistry,
  type ToolRetryPolicy,
} from './agent/tools';
export { crossRealmError, JukeboxError, type JukeboxErrorOptions } from './errors';
export { OPTIONAL_DEPENDENCIES, OptionalDependencyMissingError } from './errors/optionalDependency';
export {
  recordedOpenAIProvider,
  SessionTape,
  type SessionTapeOptions,
  wrapAnthropic,
  wrapOpenAI,
} from './integrations';
export {
  type Endpoint,
  endpointsFromEnv,
  LlmCallError,
  LlmEndpointMissingError,
  type LlmEndpoints,
  localEndpoints,
} from './llm';
export type { ChatMessage, LlmRequest, LlmResponse, Provider, ToolSpec } from './llm/types';
export { ContentDamagedError, ContentMissingError } from './recorder/content/errors';
export {
  FollowOptionsError,
  type FollowRunOptions,
  followRun,
  type RunItem,
  type RunItemKind,
  RunTapeNotFoundError,
} from './stream';
export { createOtlpTelemetry, type JukeboxTelemetryOptions } from './telemetry';
export {
  breakerStatus,
  closeBreaker,
  createJukeboxWorker,
  DEFAULT_TASK_QUEUE,
  type FinishedFork,
  type ForkRequest,
  forkRun,
  JukeboxPlugin,
  JukeboxPluginGivenTwiceError,
  type JukeboxPluginOptions,
  type JukeboxWorkerOptions,
  jukeboxClient,
  type StartAgentGroupOptions,
  type StartAgentOptions,
  startAgent,
  startAgentGroup,
  WorkflowCodeImportsNodeModuleError,
  WorkflowsModuleRequiredError,
  waitWithProgress,
} from './temporal';
export { type TemporalConfig, TemporalConfigInvalidError, temporalConfigFromEnv } from './temporal/config';
