/**
 * The workflow side of the Shadow Booth: `ctx.commit` as a saga over the commit activities (verify, files,
 * SQL, MCP, finish) and `ctx.rollback`. Deterministic orchestration only; the activities do the I/O.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  log,
  proxyActivities,
} from '@temporalio/workflow';
import {
  type CommitOptions,
  type CommitPart,
  type CommitReport,
  CommitRolledBackError,
  type RollbackReport,
  type StagedSummary,
} from '../../agent/commit';
import { GateRefusedError, type GateVerdict } from '../../booth/verifiers';
import type { WithObservations } from '../../recorder/observations';
import type { CommitActivities } from '../activities/commitActivities';
import type { AgentRunOptions } from './runOptions';

/** The message that says what happened: an activity failure's own message is generic, its cause is not. */
export function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return failureReason(err.cause);
  if (err instanceof ApplicationFailure && err.type) return `${err.type}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

export function boothSaga(
  o: Required<Pick<AgentRunOptions, 'maximumAttempts' | 'initialRetryIntervalMs' | 'heartbeatTimeoutMs'>>,
) {
  const booth = proxyActivities<CommitActivities>({
    startToCloseTimeout: 5 * 60_000,
    heartbeatTimeout: o.heartbeatTimeoutMs,
    retry: {
      maximumAttempts: o.maximumAttempts,
      initialInterval: o.initialRetryIntervalMs,
      backoffCoefficient: 2,
    },
  });

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
    try {
      const verified = await booth.boothVerify({ step, gates: options.gates ?? [], ...seen });
      verdicts = verified.verdicts;
      staged = verified.staged;
      if (verdicts.some((v) => !v.ok)) throw new GateRefusedError(verdicts);

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
      };
    } catch (err) {
      const reason = err instanceof GateRefusedError ? err.message : failureReason(err);
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
      throw new CommitRolledBackError(part, reason, verdicts, staged, err);
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
