import path from 'node:path';
import type { RolledBack } from '../boothOutcome';
import type { TapeSummary } from '../summary';

/** How a recorded run ended, as the catalog reports it. `damaged`: a frame failed verification. */
export type TapeOutcome =
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'terminated'
  | 'timed-out'
  | 'reset'
  | 'running'
  | 'damaged'
  | (string & {});

/** One recorded run, as `jbx ls` and the viewer's recordings list show it. */
export interface TapeRow {
  /** File name without `.jbx`: what `jbx show ID` accepts. */
  id: string;
  file: string;
  tapeId: string | null;
  /** The Temporal workflow type (the agent's name). */
  workflow: string | null;
  workflowId: string | null;
  runId: string | null;
  /** ISO time the tape was created. */
  started: string | null;
  startedMs: number | null;
  steps: number;
  frames: number;
  outcome: TapeOutcome;
  /** The circuit breaker tripped during the run (the outcome then is usually `failed`). */
  tripped: boolean;
  /**
   * The run's staging was rolled back (a gate refused its commit, a commit part failed, or the agent called
   * ctx.rollback) and nothing was committed after: the step and the reason. A refused refund *completes*.
   */
  rolledBack: RolledBack | null;
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  /** USD; null when no model call had a known price. */
  cost: number | null;
  bytes: number;
  /** The first fault when the tape did not verify, or its torn tail. */
  problem: string | null;
}

export function rowFromSummary(s: TapeSummary): TapeRow {
  const startedMs = s.started === null ? null : Date.parse(s.started);
  return {
    id: path.basename(s.file, '.jbx'),
    file: s.file,
    tapeId: s.tapeId,
    workflow: s.workflowType,
    workflowId: s.workflowId,
    runId: s.runId,
    started: s.started,
    startedMs,
    steps: s.steps,
    frames: s.frames,
    outcome: s.outcome,
    tripped: s.tripped,
    rolledBack: s.rolledBack,
    tokens: s.tokens.input + s.tokens.output,
    inputTokens: s.tokens.input,
    outputTokens: s.tokens.output,
    cost: s.cost,
    bytes: s.bytes,
    problem: s.problem,
  };
}
