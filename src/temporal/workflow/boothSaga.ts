/**
 * The workflow side of the Shadow Booth: `ctx.commit` as a saga over the commit activities (verify, files,
 * SQL, MCP, finish) and `ctx.rollback`. Deterministic orchestration only; the activities do the I/O.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
} from '@temporalio/workflow';
import { type ApprovalOptions, type ApprovalOutcome, resolveApprovalOptions } from '../../agent/approval';
import {
  type CommitOptions,
  type CommitPart,
  type CommitReport,
  CommitRolledBackError,
  gateNames,
  type RollbackReport,
  type StagedSummary,
} from '../../agent/commit';
import { askingApproval, GateRefusedError, type GateVerdict, refusals } from '../../booth/verifiers';
import type { WithObservations } from '../../recorder/observations';
import type { CommitActivities } from '../activities/commitActivities';
import type { ApprovalDesk } from './approvalDesk';
import { checkedActivities } from './checkedActivities';
import { type AgentRunOptions, runKeyOf } from './runOptions';

/** The message that says what happened: an activity failure's own message is generic, its cause is not. */
export function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return failureReason(err.cause);
  if (err instanceof ApplicationFailure && err.type) return `${err.type}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** The approval options of the asking gates: the first asking gate's own, else the commit's. */
function approvalOptionsFor(options: CommitOptions, asking: GateVerdict[]): ApprovalOptions | undefined {
  for (const g of options.gates ?? [])
    if (typeof g !== 'string' && g.approval && asking.some((v) => v.gate === g.name)) return g.approval;
  return options.approval;
}

/** A person said no, or nobody said anything in time: the commit stops before any part applies. */
class NotApproved extends Error {
  constructor(readonly outcome: ApprovalOutcome) {
    super(
      outcome.outcome === 'timedOut'
        ? `nobody approved it before its deadline (approval ${outcome.approvalId}); it was rolled back`
        : `rejected by ${outcome.by}${outcome.note ? `: ${outcome.note}` : ''}`,
    );
  }
}

/**
 * `desk`: where a gate's `needsApproval` waits for a person. Without one (a workflow that offers no way to
 * decide), a gate that asks refuses.
 */
export function boothSaga(
  o: Required<Pick<AgentRunOptions, 'maximumAttempts' | 'initialRetryIntervalMs' | 'heartbeatTimeoutMs'>> &
    Pick<AgentRunOptions, 'continued' | 'experiment'>,
  desk?: ApprovalDesk,
) {
  const booth = checkedActivities(
    proxyActivities<CommitActivities>({
      startToCloseTimeout: 5 * 60_000,
      heartbeatTimeout: o.heartbeatTimeoutMs,
      retry: {
        maximumAttempts: o.maximumAttempts,
        initialInterval: o.initialRetryIntervalMs,
        backoffCoefficient: 2,
      },
    }),
    runKeyOf(o),
  );

  async function rollback(
    step: number,
    reason: string,
    seen: WithObservations = {},
  ): Promise<RollbackReport> {
    return CancellationScope.nonCancellable(() => booth.boothRollback({ step, reason, ...seen }));
  }

  /** `seen`: the workflow's random and clock readings, recorded before the commit's first frames. */
  async function commit(
    step: number,
    options: CommitOptions = {},
    seen: WithObservations = {},
  ): Promise<CommitReport> {
    const compensations: Array<() => Promise<unknown>> = [];
    let part: CommitPart = 'verify';
    let verdicts: GateVerdict[] = [];
    let staged: StagedSummary | null = null;
    let approval: ApprovalOutcome | undefined;
    try {
      const gateParams = o.experiment?.gateParams;
      const verified = await booth.boothVerify({
        step,
        gates: gateNames(options),
        ...(gateParams ? { gateParams } : {}),
        ...seen,
      });
      verdicts = verified.verdicts;
      staged = verified.staged;
      const asking = askingApproval(verdicts);
      // A refusal outranks any ask: nobody is asked to approve what a gate refuses anyway.
      if (refusals(verdicts).length > 0 || (asking.length > 0 && !desk)) throw new GateRefusedError(verdicts);
      if (asking.length > 0 && desk) {
        part = 'approval';
        const opts = approvalOptionsFor(options, asking);
        approval = await desk.ask(
          step,
          'commit',
          asking.map((v) => `gate ${v.gate}: ${v.reason}`).join('; '),
          { gates: asking.map((v) => ({ gate: v.gate, reason: v.reason })) },
          opts,
        );
        if (approval.outcome === 'approved') {
          const by = approval.by;
          verdicts = verdicts.map((v) => (v.needsApproval ? { ...v, ok: true, approvedBy: by } : v));
        } else if (approval.outcome === 'timedOut' && approval.onTimeout === 'refuse') {
          part = 'verify';
          const waited = resolveApprovalOptions(opts).timeout;
          verdicts = verdicts.map((v) =>
            v.needsApproval ? { ...v, reason: `${v.reason}; nobody approved it within ${waited}` } : v,
          );
          throw new GateRefusedError(verdicts);
        } else throw new NotApproved(approval);
      }

      if (o.experiment?.stageOnly) {
        // A what-if run: the gates said yes, which is what the experiment measures; nothing is applied.
        await CancellationScope.nonCancellable(() =>
          booth.boothRollback({
            step,
            reason:
              'a what-if experiment commits nothing: the gates passed and the staged changes were discarded',
            stagedOnly: true,
          }),
        );
        return {
          staged: verified.staged,
          verdicts,
          files: { steps: 0, recovered: false },
          sql: null,
          mcp: { applied: 0, skipped: 0 },
          ...(approval ? { approval } : {}),
          stagedOnly: true,
        };
      }

      part = 'files';
      const files = await booth.boothCommitFiles({ step });
      compensations.unshift(() => booth.boothCompensateFiles({ step }));

      part = 'sql';
      const sql = await booth.boothCommitSql({ step });
      if (sql?.applied) compensations.unshift(() => booth.boothCompensateSql({ step, result: sql }));

      part = 'mcp';
      const mcp = await booth.boothCommitMcp({ step });
      compensations.unshift(() => booth.boothCompensateMcp({ step }));

      part = 'finish';
      try {
        await booth.boothFinish({ step, staged: verified.staged, verdicts });
      } catch (finishErr) {
        // Every part is durable by now: the commit happened; only the staging clean-up is left behind.
        log.error('the Shadow Booth committed but could not remove its staging area', {
          error: failureReason(finishErr),
        });
      }
      return {
        staged: verified.staged,
        verdicts,
        files: { steps: files.steps, recovered: files.recovered },
        sql: sql && { statements: sql.statements, rowsAffected: sql.rowsAffected, recovered: sql.recovered },
        mcp: { applied: mcp.applied, skipped: mcp.skipped },
        ...(approval ? { approval } : {}),
      };
    } catch (err) {
      const reason =
        err instanceof GateRefusedError || err instanceof NotApproved ? err.message : failureReason(err);
      // The part that failed may have applied some or all of itself: files are renamed into place one by one,
      // MCP calls run one by one, and a SQL transaction may have committed before a crash cut its activity short
      // on every attempt. Each part's own state says how far it got, so its compensation undoes exactly that (or
      // nothing), before the parts that had succeeded.
      const partial: Partial<Record<CommitPart, () => Promise<unknown>>> = {
        files: () => booth.boothCompensateFiles({ step }),
        sql: () => booth.boothCompensateSql({ step }),
        mcp: () => booth.boothCompensateMcp({ step }),
      };
      const undoFailedPart = partial[part];
      if (undoFailedPart) compensations.unshift(undoFailedPart);
      await CancellationScope.nonCancellable(async () => {
        for (const compensate of compensations) {
          try {
            await compensate();
          } catch (undoErr) {
            // One failed compensation must not stop the others; the log names it.
            log.error('a Shadow Booth compensation failed', { part, error: failureReason(undoErr) });
          }
        }
        try {
          await booth.boothRollback({ step, reason });
        } catch (rollbackErr) {
          log.error('could not discard the staged changes', { error: failureReason(rollbackErr) });
        }
      });
      // A run cancelled while it waited for a person ends cancelled, its staging rolled back like any other.
      if (part === 'approval' && isCancellation(err)) throw err;
      throw new CommitRolledBackError(
        part,
        reason,
        verdicts,
        staged,
        err,
        err instanceof NotApproved ? err.outcome : null,
      );
    }
  }

  /**
   * After any failure of the agent: discard what it staged and record why, so nothing outlives a failed run.
   * Best effort: the agent's own error is what the run reports.
   */
  async function discardAfterFailure(step: number, err: unknown, seen: WithObservations = {}): Promise<void> {
    if (err instanceof CommitRolledBackError) return;
    try {
      await rollback(step, `the run failed: ${failureReason(err)}`, seen);
    } catch (rollbackErr) {
      log.warn('could not discard the staged changes of a failed run', { error: failureReason(rollbackErr) });
    }
  }

  /**
   * After a run completed without settling its escrow: nobody can commit it once the run is over, so it is
   * rolled back and recorded. Best effort: the agent's result stands even if the discard fails.
   */
  async function discardUnsettled(step: number, seen: WithObservations = {}): Promise<void> {
    try {
      const report = await rollback(
        step,
        'the run completed without ctx.commit(), so what it staged was discarded',
        seen,
      );
      if (report.booth && Object.values(report.discarded).some((list) => list.length > 0))
        log.warn('the run completed without ctx.commit(); its staged changes were rolled back', {
          discarded: report.discarded,
        });
    } catch (rollbackErr) {
      log.warn('could not discard the staged changes of a completed run', {
        error: failureReason(rollbackErr),
      });
    }
  }

  return { commit, rollback, discardAfterFailure, discardUnsettled };
}
