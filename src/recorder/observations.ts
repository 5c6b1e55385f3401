/**
 * What the workflow observed between activities (its deterministic random and clock readings). Types only:
 * the workflow bundle imports this, so it must stay free of Node APIs.
 */
export type Observation =
  | { kind: 'random'; seq: number; step: number; value: number }
  | { kind: 'clock'; seq: number; step: number; nowMs: number };

/** Carried on an activity's input so its recorder writes them before the step's own frames. */
export interface WithObservations {
  observations?: Observation[];
}

/** Name of the activity that writes the outcome and seals the tape. */
export const RECORD_OUTCOME_ACTIVITY = 'recordOutcome';

export interface RecordOutcomeInput extends WithObservations {
  /** Steps the run started, i.e. the step index the outcome is recorded at. */
  step: number;
  status: 'completed' | 'failed' | 'cancelled';
  result?: unknown;
  error?: { name: string; message: string; type?: string; code?: string };
}
