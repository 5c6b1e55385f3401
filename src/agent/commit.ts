/**
 * What ctx.commit and ctx.rollback take and give back, and the error a refused or failed commit throws: public
 * types of the agent API. The Temporal wing (src/temporal/workflow/boothSaga.ts, the commit activities) runs them.
 */
import type { GateVerdict } from '../booth/verifiers';
import { crossRealmError, JukeboxError } from '../errors/JukeboxError';
import type { ApprovalOptions, ApprovalOutcome } from './approval';

/** What was staged, small enough for a workflow result and a person to read. */
export interface StagedSummary {
  files: string[];
  sql: string[];
  mcp: string[];
}

export interface CommitOptions {
  /**
   * Verifiers and policy gates (registered on the worker's booth by name) that must pass first. A gate may ask
   * a person instead (`needsApproval`): the commit then waits for their decision, with the gate's own
   * `approval` options when given as `{ name, approval }`, else the commit's.
   */
  gates?: Array<string | { name: string; approval?: ApprovalOptions }>;
  /** How a gate's ask waits (timeout, onTimeout, deciders); DEFAULT_APPROVAL_TIMEOUT and 'rollback' by default. */
  approval?: ApprovalOptions;
}

/** The gate names of CommitOptions.gates. */
export function gateNames(options: CommitOptions): string[] {
  return (options.gates ?? []).map((g) => (typeof g === 'string' ? g : g.name));
}

export interface CommitReport {
  staged: StagedSummary;
  verdicts: GateVerdict[];
  files: { steps: number; recovered: boolean };
  sql: { statements: number; rowsAffected: number; recovered: boolean } | null;
  mcp: { applied: number; skipped: number };
  /** A gate asked a person, who approved: who, when, with what note. */
  approval?: ApprovalOutcome;
  /**
   * A what-if experiment's run (docs/experiments.md): the gates passed, and the staged changes were discarded
   * instead of applied, so nothing became durable. The parts report nothing applied.
   */
  stagedOnly?: true;
}

/** `approval`: a gate asked a person, who rejected the commit or did not decide in time. */
export type CommitPart = 'verify' | 'approval' | 'files' | 'sql' | 'mcp' | 'finish';

/**
 * The commit did not happen: a gate refused, or a part failed and the parts applied before it were
 * compensated. The staged changes were discarded. `cause` is the original failure.
 */
export class CommitRolledBackError extends JukeboxError {
  readonly part: CommitPart;
  readonly verdicts: GateVerdict[];
  readonly reason: string;
  /** What had been staged (and is now discarded), when the verify step got to list it. */
  readonly staged: StagedSummary | null;
  /** The person's rejection, or the missing decision, when `part` is `approval`. */
  readonly approval: ApprovalOutcome | null;
  constructor(
    part: CommitPart,
    reason: string,
    verdicts: GateVerdict[],
    staged: StagedSummary | null,
    cause: unknown,
    approval: ApprovalOutcome | null = null,
  ) {
    super(
      'COMMIT_ROLLED_BACK',
      `the run's staged changes were rolled back, nothing of them remains: ${part === 'verify' || part === 'approval' ? '' : `committing ${part} failed: `}${reason}`,
      { cause, nonRetryable: true },
    );
    this.part = part;
    this.reason = reason;
    this.verdicts = verdicts;
    this.staged = staged;
    this.approval = approval;
  }
}
crossRealmError('CommitRolledBackError', CommitRolledBackError);

export interface RollbackReport {
  /** False when the worker has no booth: there was nothing to discard. */
  booth: boolean;
  discarded: StagedSummary;
  reason: string;
}
