/**
 * `jbx view`: a local web app over a folder of tapes. Recordings list with the catalog's filters, a run's
 * timeline with each step's conversation, tool calls, staged effects and decisions, stream playback at the
 * recorded timing, two runs side by side through src/timetravel/diff/, and the tape's verification status.
 */
export { forkCommandLine, shellQuote, temporalRunUrl } from './commandLine';
export { ViewerListenError } from './errors';
export { type DiffLine, lineDiff } from './fileDiff';
export { type ApprovalView, buildRunView, type RunView, type StepRow, type Verification } from './runView';
export {
  DECISION_TOKEN_HEADER,
  startViewer,
  VIEWER_HOST,
  type Viewer,
  type ViewerDecide,
  type ViewerDecision,
  type ViewerOptions,
} from './server';
export { type EffectView, type StepDetail, stepDetail } from './stepDetail';
export { TapeLibrary, TapeNotServedError } from './tapeLibrary';
