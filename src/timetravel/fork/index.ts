/**
 * Forking timelines: start a new run from a frame of a recorded one, with the steps before the fork answered
 * from the parent tape and the later ones live with other model, provider, system prompt or request fields;
 * restore the parent's staged world at the fork point. See docs/time-travel.md.
 */
export {
  ForkDivergenceError,
  ForkRequestError,
  ForkWorldChangedError,
  HistoryMismatchError,
  ParentTapeChangedError,
} from './errors';
export {
  alignHistory,
  type ForkPoint,
  type HistoryAlignment,
  type HistoryEventRef,
  type HistorySegment,
  type StepEvents,
  stepAtEvent,
} from './historyPoint';
export { InheritedStepError } from './inheritedSteps';
export type { ForkRunOptions, InheritedObservation, InheritedStep } from './lineage';
export { applyLayers, applyOverrides, type ForkOverrides, type OverrideLayer } from './overrides';
export { forkFrameIndex, inheritedChain } from './parentTape';
export { type RestoreReport, restoreWorld, type WorldTarget } from './worldRestore';
