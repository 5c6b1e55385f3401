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
export type { SqlWriteSet } from './booth/sql/stagedSql';
// Gates are registered on the worker (`new JukeboxPlugin({ gates })`), so their helpers come from here too.
export {
  type BoothChangeSet,
  type Gate,
  type GateContext,
  type GateDecision,
  type GateParams,
  GateRefusedError,
  type GateVerdict,
  needsApproval,
  pass,
  refuse,
} from './booth/verifiers';
export { crossRealmError, JukeboxError, type JukeboxErrorOptions } from './errors';
export { OPTIONAL_DEPENDENCIES, OptionalDependencyMissingError } from './errors/optionalDependency';
export {
  type JukeboxFetchOptions,
  jukeboxFetch,
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
export {
  costOf,
  type LoadPriceBookOptions,
  loadPriceBook,
  PriceBook,
  type PricedCall,
  UnknownModelPriceError,
} from './llm/pricing';
export type { ChatMessage, LlmRequest, LlmResponse, Provider, ToolSpec } from './llm/types';
export {
  type CatalogListing,
  CatalogQueryError,
  listTapes,
  TapeCatalog,
  type TapeCatalogOptions,
  type TapeOutcome,
  type TapeQuery,
  type TapeRow,
} from './recorder/catalog';
export { ContentDamagedError, ContentMissingError } from './recorder/content/errors';
export { ObjectTapeStore } from './recorder/objectStore';
export { FolderTapeStore, TapeStore } from './recorder/store';
export { tapeStoreFromEnv } from './recorder/storeFromEnv';
export {
  FollowOptionsError,
  type FollowRunOptions,
  type FollowTapeOptions,
  followRun,
  followRunAsUIMessageStream,
  followTape,
  type JukeboxUIMessageChunk,
  type RunItem,
  type RunItemKind,
  RunTapeNotFoundError,
} from './stream';
export { createOtlpTelemetry, type JukeboxTelemetryOptions } from './telemetry';
// What-if experiments over recorded runs (docs/experiments.md).
export {
  ApprovalDeciderRefusedError,
  ApprovalDecisionInvalidError,
  ApprovalNotPendingError,
  approve,
  breakerStatus,
  bundleTracedWorkflows,
  captureRunHistory,
  closeBreaker,
  connectTemporal,
  connectTemporalWorker,
  createJukeboxWorker,
  DEFAULT_TASK_QUEUE,
  type DecideOptions,
  type DecisionResult,
  type ExperimentProgress,
  type FinishedFork,
  type ForkRequest,
  forkRun,
  JukeboxPlugin,
  JukeboxPluginGivenTwiceError,
  type JukeboxPluginOptions,
  type JukeboxWorkerOptions,
  jukeboxClient,
  listApprovals,
  type NoWorkerNotice,
  noWorkerMessage,
  type PendingApproval,
  pendingApproval,
  type RunExperimentOptions,
  reject,
  runExperiment,
  type StartAgentGroupOptions,
  type StartAgentOptions,
  startAgent,
  startAgentGroup,
  TemporalNamespaceNotFoundError,
  TemporalUnreachableError,
  validateFork,
  type WaitOptions,
  WorkflowCodeImportsNodeModuleError,
  WorkflowsModuleRequiredError,
  waitForApproval,
  waitWithProgress,
  watchForWorker,
} from './temporal';
export { type TemporalConfig, TemporalConfigInvalidError, temporalConfigFromEnv } from './temporal/config';
export {
  diffTimelines,
  renderDiffHtml,
  renderDiffTerminal,
  type TimelineDiff,
} from './timetravel/diff';
export {
  type ExperimentChange,
  type ExperimentOutcome,
  type ExperimentReport,
  ExperimentRequestError,
  type ExperimentRunResult,
  ExperimentStateError,
  type ExperimentTotals,
  renderExperimentHtml,
  renderExperimentJunit,
  renderExperimentTerminal,
} from './timetravel/experiment';
export { readTimeline, type Timeline } from './timetravel/replay';
