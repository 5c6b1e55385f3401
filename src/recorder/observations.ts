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

/**
 * Carried on every activity input of a run's later segments (a run that continued as new): the run id of its
 * first segment, under which its one tape and its Shadow Booth staging live.
 */
export interface WithRunKey {
  runKey?: string;
}

/** Name of the activity that writes the outcome and seals the tape. */
export const RECORD_OUTCOME_ACTIVITY = 'recordOutcome';

/** Name of the activity that writes a segment frame: the run continues as new after it. */
export const RECORD_SEGMENT_ACTIVITY = 'recordSegment';

/** Why a segment ended and what its history held then (FORMAT.md, `segment`). */
export interface RecordSegmentInput extends WithObservations {
  /** The first step of the next segment: every step before it is done and on the tape. */
  step: number;
  /** This segment's number (0 for the run's first). */
  segment: number;
  reason: 'suggested' | 'steps' | 'history-bytes' | 'history-events';
  historyEvents: number;
  historyBytes: number;
}

export interface RecordOutcomeInput extends WithObservations {
  /** Steps the run started, i.e. the step index the outcome is recorded at. */
  step: number;
  status: 'completed' | 'failed' | 'cancelled';
  result?: unknown;
  error?: { name: string; message: string; type?: string; code?: string };
}

/**
 * How a run ended that its workflow code could not record (FORMAT.md, `outcome`): the server terminated it, it
 * timed out, or it was reset to another run; or it ended on its own but left its tape open or its staging behind.
 * Written by the workers' sweeper.
 */
export interface EndedRunOutcome {
  status: 'terminated' | 'timed-out' | 'reset' | 'completed' | 'failed' | 'cancelled';
  error: { name: string; message: string };
  /** The run's last execution, when it is not the one the tape is named after (a run that continued as new). */
  runId?: string;
}
