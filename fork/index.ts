/**
 * Forking timelines: start a new run from a frame of a recorded one, with the steps before the fork answered
 * from the parent tape and the later ones live with other model, provider, system prompt or request fields;
 * restore the parent's staged world at the fork point. See docs/time-travel.md.
 */
export { createForkActivities, type ForkActivities } from './activities';
export {
  ForkDivergenceError,
  ForkRequestError,
  ForkWorldChangedError,
  ParentTapeChangedError,
} from './errors';
export {
  type FinishedFork,
  type ForkRequest,
  forkRun,
  PROVIDERS,
  parentLayers,
  type StartedFork,
  type StartForkOptions,
  startFork,
  type ValidatedFork,
  validateFork,
} from './forkRun';
export { InheritedStepError } from './inheritedSteps';
export type { ForkRunOptions, InheritedObservation, InheritedStep } from './lineage';
export { applyLayers, applyOverrides, type ForkOverrides, type OverrideLayer } from './overrides';
export { forkFrameIndex, inheritedChain } from './parentTape';
export { type RestoreReport, restoreWorld, type WorldTarget } from './worldRestore';
