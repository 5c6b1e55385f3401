/** Running agents: a worker factory and client helpers to start runs and follow their steps. */

export { createDirectContext } from '../agent/directContext';
export {
  type BreakerActivities,
  type BreakerActivityDeps,
  type BreakerPreflight,
  createBreakerActivities,
  priceKey,
} from './activities/breakerActivities';
export { createForkActivities, type ForkActivities } from './activities/forkActivities';
export { createRecorderActivities, type RecorderActivities } from './activities/recorderActivities';
export { type StartAgentOptions, startAgent, type WaitOptions, waitWithProgress } from './client/agentClient';
export {
  breakerStatus,
  closeBreaker,
  type StartAgentGroupOptions,
  startAgentGroup,
} from './client/agentGroupClient';
export {
  ApprovalDeciderRefusedError,
  ApprovalDecisionInvalidError,
  ApprovalNotPendingError,
  approve,
  type DecideOptions,
  type DecisionResult,
  listApprovals,
  type PendingApproval,
  pendingApproval,
  reject,
  waitForApproval,
} from './client/approvals';
export {
  connectTemporal,
  connectTemporalWorker,
  TemporalNamespaceNotFoundError,
  TemporalUnreachableError,
} from './client/connect';
export {
  type FinishedFork,
  type ForkRequest,
  forkRun,
  type HistoryForkOptions,
  type HistoryForkRequest,
  PROVIDERS,
  parentLayers,
  resolveHistoryFork,
  type StartedFork,
  type StartForkOptions,
  startFork,
  type ValidatedFork,
  validateFork,
} from './client/forkRun';
export { jukeboxClient } from './client/jukeboxClient';
export { isServerUp, probeServer, type ServerState } from './client/probe';
export {
  EXPERIMENT_ID_MARKER,
  type ExperimentProgress,
  type RunExperimentOptions,
  runExperiment,
} from './client/runExperiment';
export { loadRunHistory, type RunHistory, type RunHistoryRequest } from './client/runHistory';
export { fetchHistoryBesideTape, type TemporalSession, withTemporal } from './client/session';
export {
  captureRunHistory,
  type HistorySidecar,
  hasStoredHistory,
  loadStoredHistory,
  sidecarPath,
  storeHistory,
} from './client/storedHistory';
export {
  LIVE_POLLER_MS,
  livePollers,
  type NoWorkerNotice,
  noWorkerMessage,
  type WorkerWatchOptions,
  watchForWorker,
} from './client/workerWatch';
export { CONTENT_DRIVER_NAME, ContentDriver, type ContentDriverOptions } from './content/contentDriver';
export {
  type ContentOptions,
  DEFAULT_PAYLOAD_SIZE_THRESHOLD,
  jukeboxDataConverter,
} from './content/dataConverter';
export { claimOf, inlineHistoryContent, payloadJson, resolvePayload } from './content/historyPayloads';
export { type CodeCheck, checkAgentCode, describeCodeCheck } from './worker/codeCheck';
export {
  createJukeboxWorker,
  DEFAULT_TASK_QUEUE,
  type JukeboxWorkerOptions,
  WorkflowsModuleRequiredError,
} from './worker/createWorker';
export {
  JUKEBOX_PLUGIN_NAME,
  JukeboxPlugin,
  JukeboxPluginGivenTwiceError,
  type JukeboxPluginOptions,
} from './worker/jukeboxPlugin';
export { LATENCY_WORKER_OPTIONS } from './worker/latencyOptions';
export { installQuietRuntime, installStderrRuntime } from './worker/quietRuntime';
export { TapeRecordingInterceptor } from './worker/recorderInterceptor';
export { type TapeSinks, tapeSinks } from './worker/tapeSinks';
export {
  replayHistoryWithCode,
  replayTemporalHistory,
  type TemporalReplayReport,
} from './worker/temporalReplay';
export { type BreakerWorkerOptions, jukeboxWorkerParts, type WorkerParts } from './worker/workerParts';
export {
  assertTracedBundle,
  bundleTracedWorkflows,
  WORKFLOW_INTERCEPTORS_MODULE,
  type WorkerTelemetry,
  workerTelemetry,
} from './worker/workerTelemetry';
export {
  bundleAgentWorkflows,
  type WorkflowBundleOptions,
  WorkflowCodeImportsNodeModuleError,
} from './worker/workflowBundle';
export {
  type ApprovalState,
  approvalQuery,
  type DecisionReceipt,
  decideUpdate,
  decisionSignal,
} from './workflow/approvalMessages';
export {
  type BreakerDecision,
  type BreakerStatus,
  breakerCloseSignal,
  breakerStatusQuery,
} from './workflow/breakerSignals';
