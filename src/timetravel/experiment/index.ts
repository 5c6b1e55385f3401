/**
 * What-if experiments over recorded runs: the pure parts (outcomes, divergence, totals, the state file and the
 * reports). runExperiment (src/temporal/client/runExperiment.ts) runs them on Temporal. docs/experiments.md.
 */
export { firstDivergence } from './divergence';
export { ExperimentRequestError, ExperimentStateError } from './errors';
export { runSideOf } from './outcome';
export { renderExperimentHtml, renderExperimentJunit, renderExperimentTerminal } from './render';
export { ExperimentState, type ExperimentStateHeader } from './state';
export { experimentTotals } from './totals';
export type {
  ExperimentChange,
  ExperimentOutcome,
  ExperimentReport,
  ExperimentRunResult,
  ExperimentTotals,
  FirstDivergence,
  RunSide,
} from './types';
