/**
 * The Shadow Booth's steps on a tape: `ctx.commit` (the saga of src/temporal/workflow/boothSaga.ts: verify, files,
 * SQL, MCP, finish, or the compensations and the rollback after a refusal or a failed part) and `ctx.rollback`,
 * read back as what the agent got: the commit report, the refusal or failure as CommitRolledBackError's fields,
 * or the rollback report. Every activity of the step is kept, so a reader can look at anything else the step
 * recorded (an approval, say) without this module knowing it.
 */
import type { ApprovalOutcome } from '../../agent/approval';
import type { CommitPart, CommitReport, RollbackReport, StagedSummary } from '../../agent/commit';
import {
  askingApproval,
  type BoothChangeSet,
  GateRefusedError,
  type GateVerdict,
  refusals,
} from '../../booth/verifiers';
import type { StepEffect } from './timeline';

type P = Record<string, unknown>;

/** A step activity's recorded error (activity.error), as the recorder wrote it. */
export interface RecordedError {
  name: string;
  message: string;
  code?: string;
  type?: string;
}

/** The final attempt of one activity of a step. */
export interface RecordedActivity {
  activityId: string;
  activityType: string;
  attempts: number;
  /** The activity.start frame of the final attempt. */
  startFrame: number;
  input: unknown;
  /** The final attempt completed (its result is `result`), or failed for good (`error`), or neither: the tape ends in it. */
  status: 'completed' | 'failed' | 'unfinished';
  result?: unknown;
  error?: RecordedError;
  /** Effect frames of the final attempt (commit, rollback, mcp.call, ...). */
  effects: StepEffect[];
}

/** What the agent got from a booth step. */
export type BoothAnswer =
  | { type: 'committed'; report: CommitReport }
  | {
      type: 'rolled-back';
      part: CommitPart;
      reason: string;
      verdicts: GateVerdict[];
      staged: StagedSummary | null;
      /** The failure behind a rollback that was not a gate's refusal. */
      error?: RecordedError;
      /** A person's rejection, or the missing decision (`part` approval). */
      approval?: ApprovalOutcome;
    }
  | { type: 'rollback'; report: RollbackReport }
  | { type: 'failed'; error: RecordedError }
  | { type: 'unfinished' };

export interface BoothStep {
  step: number;
  kind: 'commit' | 'rollback';
  firstFrame: number;
  lastFrame: number;
  /** The activity.start of boothVerify (a commit) or boothRollback (a rollback): the step's request. */
  requestFrame: number;
  /** A commit: the gates it named. */
  gates?: string[];
  /** A rollback: the reason the agent gave. */
  reason?: string;
  /** The change set the gates judged, whole (recorded by the verify step), else null (older tapes). */
  changes: BoothChangeSet | null;
  /** The frame that holds `changes`. */
  changesFrame?: number;
  answer: BoothAnswer;
  /** The step's activities in tape order (final attempts). */
  activities: RecordedActivity[];
}

/** The commit saga's activities and the part each stands for; compensations and the rollback close a refusal. */
const SAGA_PART: Record<string, CommitPart | 'compensate' | 'rollback'> = {
  boothVerify: 'verify',
  boothCommitFiles: 'files',
  boothCommitSql: 'sql',
  boothCommitMcp: 'mcp',
  boothFinish: 'finish',
  boothCompensateFiles: 'compensate',
  boothCompensateSql: 'compensate',
  boothCompensateMcp: 'compensate',
  boothRollback: 'rollback',
  // A gate that asked a person: the request, then the decision (or the deadline passing), both in the step.
  approvalRequested: 'approval',
  approvalDecided: 'approval',
};

export function isBoothActivity(activityType: string): boolean {
  return Object.hasOwn(SAGA_PART, activityType);
}

/**
 * The message boothSaga's failureReason gives for a failed part: a failed activity reaches the workflow as an
 * ApplicationFailure whose type is the error's class name (or its own type). Only for tapes whose rollback did
 * not record the reason itself.
 */
function reasonOf(e: RecordedError): string {
  return `${e.type ?? e.name}: ${e.message}`;
}

function commitAnswer(acts: RecordedActivity[]): BoothAnswer {
  const byPart = (part: string) => acts.find((a) => SAGA_PART[a.activityType] === part);
  const rollback = byPart('rollback');
  // The reason the saga computed is the rollback's own input: exactly what the agent's error said.
  const recordedReason = (rollback?.input as P | undefined)?.reason;
  const rolledBack = (
    part: CommitPart,
    fallback: string,
    verdicts: GateVerdict[],
    staged: StagedSummary | null,
    error?: RecordedError,
  ): BoothAnswer => ({
    type: 'rolled-back',
    part,
    reason: typeof recordedReason === 'string' ? recordedReason : fallback,
    verdicts,
    staged,
    ...(error ? { error } : {}),
  });
  const verify = byPart('verify')!;
  if (verify.status === 'unfinished') return { type: 'unfinished' };
  if (verify.status === 'failed')
    return rolledBack('verify', reasonOf(verify.error!), [], null, verify.error);
  const verified = (verify.result ?? {}) as { staged?: StagedSummary; verdicts?: GateVerdict[] };
  let verdicts = verified.verdicts ?? [];
  const staged = verified.staged ?? null;
  if (refusals(verdicts).length > 0)
    return rolledBack('verify', new GateRefusedError(verdicts).message, verdicts, staged);
  // A gate asked a person; the decision is the input of the step's approvalDecided activity.
  let approval: ApprovalOutcome | undefined;
  if (askingApproval(verdicts).length > 0) {
    const decided = acts.find((a) => a.activityType === 'approvalDecided');
    approval = (decided?.input as { outcome?: ApprovalOutcome } | undefined)?.outcome;
    if (!approval) return { type: 'unfinished' };
    if (approval.outcome === 'timedOut' && approval.onTimeout === 'refuse') {
      // The asking verdicts turned refusals, saying how long nobody decided (as boothSaga words them).
      const asked = acts.find((a) => a.activityType === 'approvalRequested');
      const waited = (asked?.input as { request?: { timeout?: string } } | undefined)?.request?.timeout;
      if (waited !== undefined)
        verdicts = verdicts.map((v) =>
          v.needsApproval ? { ...v, reason: `${v.reason}; nobody approved it within ${waited}` } : v,
        );
    }
    if (approval.outcome !== 'approved') {
      const stopped = rolledBack(
        approval.outcome === 'timedOut' && approval.onTimeout === 'refuse' ? 'verify' : 'approval',
        'not approved',
        verdicts,
        staged,
      );
      return approval.outcome === 'timedOut' && approval.onTimeout === 'refuse'
        ? stopped
        : ({ ...stopped, approval } as BoothAnswer);
    }
    const by = approval.by;
    verdicts = verdicts.map((v) => (v.needsApproval ? { ...v, ok: true, approvedBy: by } : v));
  }
  // A what-if experiment's commit: the gates passed and the rollback discarded what a commit would apply.
  if (rollback?.status === 'completed' && (rollback.input as P | undefined)?.stagedOnly === true)
    return {
      type: 'committed',
      report: {
        staged: staged ?? { files: [], sql: [], mcp: [] },
        verdicts,
        files: { steps: 0, recovered: false },
        sql: null,
        mcp: { applied: 0, skipped: 0 },
        ...(approval ? { approval } : {}),
        stagedOnly: true,
      },
    };
  const results: Partial<Record<CommitPart, P | null>> = {};
  for (const part of ['files', 'sql', 'mcp'] as const) {
    const a = byPart(part);
    if (!a || a.status === 'unfinished') return { type: 'unfinished' };
    if (a.status === 'failed') return rolledBack(part, reasonOf(a.error!), verdicts, staged, a.error);
    results[part] = (a.result ?? null) as P | null;
  }
  // A failed finish leaves the commit standing (only the staging clean-up is left behind); a missing one means
  // the tape ends before the step did.
  const finish = byPart('finish');
  if (!finish || finish.status === 'unfinished') return { type: 'unfinished' };
  const files = results.files as { steps: number; recovered: boolean };
  const sql = results.sql as { statements: number; rowsAffected: number; recovered: boolean } | null;
  const mcp = results.mcp as { applied: number; skipped: number };
  return {
    type: 'committed',
    report: {
      staged: staged ?? { files: [], sql: [], mcp: [] },
      verdicts,
      files: { steps: files.steps, recovered: files.recovered },
      sql: sql && { statements: sql.statements, rowsAffected: sql.rowsAffected, recovered: sql.recovered },
      mcp: { applied: mcp.applied, skipped: mcp.skipped },
      ...(approval ? { approval } : {}),
    },
  };
}

function rollbackAnswer(a: RecordedActivity): BoothAnswer {
  if (a.status === 'unfinished') return { type: 'unfinished' };
  if (a.status === 'failed') return { type: 'failed', error: a.error! };
  return { type: 'rollback', report: a.result as RollbackReport };
}

/**
 * The booth steps among a step's activities. `runEnd`: the step number the outcome was recorded at, where the
 * workflow itself discards what a run left unsettled (not an agent step).
 */
export function boothStepOf(
  step: number,
  activities: RecordedActivity[],
  frames: { first: number; last: number },
  runEnd: number | null,
  changesOf: (a: RecordedActivity) => { changes: BoothChangeSet; frame: number } | null,
): BoothStep | null {
  const acts = activities
    .filter((a) => isBoothActivity(a.activityType))
    .sort((x, y) => x.startFrame - y.startFrame);
  const verify = acts.find((a) => a.activityType === 'boothVerify');
  if (verify) {
    const recorded = changesOf(verify);
    return {
      step,
      kind: 'commit',
      firstFrame: frames.first,
      lastFrame: frames.last,
      requestFrame: verify.startFrame,
      gates: ((verify.input as P | undefined)?.gates as string[] | undefined) ?? [],
      changes: recorded?.changes ?? null,
      ...(recorded ? { changesFrame: recorded.frame } : {}),
      answer: commitAnswer(acts),
      activities: acts,
    };
  }
  const rollback = acts.find((a) => a.activityType === 'boothRollback');
  if (!rollback || step === runEnd) return null;
  const reason = (rollback.input as P | undefined)?.reason;
  return {
    step,
    kind: 'rollback',
    firstFrame: frames.first,
    lastFrame: frames.last,
    requestFrame: rollback.startFrame,
    reason: typeof reason === 'string' ? reason : '',
    changes: null,
    answer: rollbackAnswer(rollback),
    activities: acts,
  };
}
