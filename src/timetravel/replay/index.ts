/**
 * Time travel, reading side: a tape as a timeline of steps, offline replay of the agent's code against it (no
 * Temporal, no network) with a divergence audit, the project configuration that says where agent code lives,
 * the agent-code hash check, and the Temporal history stored beside a tape for `Worker.runReplayHistory`.
 */

export { type AgentCode, type FindAgentCodeOptions, findAgentCode, storedCodeDirs } from './agentCode';
export { type LocatedAgent, loadGates, loadRestaging, locateAgent } from './agentLocator';
export type { BoothAnswer, BoothStep, RecordedActivity } from './boothSteps';
export { asRecorded, differences } from './compare';
export {
  AgentCodeNotFoundError,
  type Divergence,
  HistoryMissingError,
  ProjectConfigError,
  ReplayCodeMissingError,
  ReplayDivergenceError,
  ReplayedStepError,
  TapeNotReplayableError,
} from './errors';
export { junitXml } from './junit';
export { createOfflineContext, type OfflineReplayOptions, type OfflineReplayState } from './offlineContext';
export { loadProjectConfig, type ProjectConfig } from './projectConfig';
export { type ReplayOptions, type ReplayReport, replayTape } from './replayTape';
export { type ReplayWorld, Restaging, stagedDivergence, stagedEntries } from './restaging';
export {
  type ReplayTapesOptions,
  replayTapes,
  replayWithCode,
  type SuiteReport,
  type SuiteSummary,
  type TapeReplayResult,
} from './suite';
export { listTapes } from './tapeFiles';
export {
  type RecordedRequest,
  readTimeline,
  type StepEffect,
  stepOfFrame,
  type Timeline,
  type TimelineStep,
} from './timeline';
