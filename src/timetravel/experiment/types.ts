/**
 * What-if experiments over recorded runs (docs/experiments.md): every run of a set forked at its first model step
 * with one change, run with nothing committed, and compared with the recording. Types only.
 */
import type { GateParams } from '../../booth/verifiers';
import type { ForkOverrides } from '../fork/overrides';

/** What an experiment changes: the fork overrides of its model steps, and its gates' parameters. */
export interface ExperimentChange {
  overrides: ForkOverrides;
  gateParams?: GateParams;
}

/**
 * How a run ended, as an experiment compares it: `committed` (for an experiment's run: its gates passed, so it
 * would have committed), `refused` (a gate, or a person, said no), `rolled back` (a part of the commit failed,
 * or the agent rolled back itself), `tripped` (the circuit breaker stopped it); a run that never committed
 * ends `completed` or `failed`; `unfinished` when its tape ends before its outcome.
 */
export type ExperimentOutcome =
  | 'committed'
  | 'refused'
  | 'rolled back'
  | 'tripped'
  | 'completed'
  | 'failed'
  | 'unfinished';

/** One side of a run: the recording (`before`) or the experiment's fork (`after`). */
export interface RunSide {
  outcome: ExperimentOutcome;
  /** The gates' verdicts (or the failure) behind the outcome, in one line. */
  reason: string;
  steps: number;
  inputTokens: number;
  outputTokens: number;
  tokens: number;
  /** USD; null when no step had a known price. */
  cost: number | null;
}

/** Where the fork first got an answer the recording did not. */
export interface FirstDivergence {
  step: number;
  /** The fork tape's frame index where that step (or the outcome) starts. */
  frame: number;
  /** The same point on the recording's tape. */
  parentFrame: number;
  /** `llm`, `tool`, `commit`, `rollback`, or `end` (the runs took a different number of steps). */
  kind: string;
  /** The answer fields that differ (`text`, `toolCalls`, `output`, `verdicts`, ...). */
  fields: string[];
}

export interface ExperimentRunResult {
  /** The recording's file name in the folder (its id in the folder). */
  id: string;
  tape: string;
  workflowId: string;
  /** `done`: both sides read and compared; `failed`: the fork could not be started, or its tape not read. */
  status: 'done' | 'failed';
  error?: string;
  forkWorkflowId: string;
  forkTape?: string;
  /** The step the fork started at (the recording's first model step). */
  forkStep?: number;
  diverged: boolean;
  firstDivergence: FirstDivergence | null;
  before: RunSide;
  after: RunSide | null;
}

export interface ExperimentTotals {
  runs: number;
  done: number;
  failed: number;
  diverged: number;
  /** Runs whose outcome changed. */
  outcomeChanged: number;
  /** Outcome counts before and after, by outcome. */
  outcomesBefore: Partial<Record<ExperimentOutcome, number>>;
  outcomesAfter: Partial<Record<ExperimentOutcome, number>>;
  /** "committed → refused": count, for every outcome that changed. */
  transitions: Record<string, number>;
  tokensBefore: number;
  tokensAfter: number;
  costBefore: number;
  costAfter: number;
}

export interface ExperimentReport {
  /** Derived from the change and the recordings: the same experiment over the same runs has the same id. */
  id: string;
  change: ExperimentChange;
  dir: string;
  stateFile: string;
  runs: ExperimentRunResult[];
  totals: ExperimentTotals;
  /** Runs finished by an earlier, interrupted invocation and taken from the state file. */
  resumed: number;
  ok: boolean;
}
