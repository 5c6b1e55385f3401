/**
 * The Shadow Booth's side of the saga: each part of a run's commit is its own activity, so Temporal retries
 * exactly the part a crash interrupted, and each records its commit or compensation on the run's tape. The
 * workflow (src/temporal/workflow/boothSaga.ts) orders them and compensates; all I/O is here.
 */
import type { RollbackReport, StagedSummary } from '../../agent/commit';
import type { McpCommitResult, McpCompensateResult } from '../../booth/mcp/escrow';
import type { BoothRuntime, FilesCommitReport, ShadowBooth } from '../../booth/shadowBooth';
import { BoothNotConfiguredError } from '../../booth/shadowBooth';
import type { SqlCommitResult } from '../../booth/sql';
import { type BoothChangeSet, type GateParams, type GateVerdict, runGates } from '../../booth/verifiers';
import { oneLine, printable, printableJson } from '../../errors';
import { currentActivityTape } from '../../recorder/activityTape';
import type { WithObservations } from '../../recorder/observations';
import { activityRun } from './activityRun';

export interface BoothStepInput extends WithObservations {
  step: number;
}

export interface VerifyReport {
  staged: StagedSummary;
  verdicts: GateVerdict[];
}

/**
 * What a run staged, one line per file change, SQL statement and escrowed MCP call. The agent chose the names,
 * statements and arguments: a newline or a bidi control in one is escaped (src/errors/printable.ts), so it can
 * neither add a line to what a person approving reads nor reorder one (file summaries come escaped).
 */
export function summarize(c: BoothChangeSet): StagedSummary {
  const sql = (c.sql as { statements?: { statement: string; params: unknown }[] } | null)?.statements ?? [];
  return {
    files: c.files.map((f) => f.summary),
    sql: sql.map((s) => `${oneLine(s.statement)} ${printableJson(s.params)}`),
    mcp: c.mcp.map((m) => `${printable(m.server)}/${printable(m.tool)} ${printableJson(m.arguments)}`),
  };
}

const EMPTY: StagedSummary = { files: [], sql: [], mcp: [] };

export function createCommitActivities(runtime: BoothRuntime | undefined) {
  /**
   * Opens this run's booth for the activity. Like every step, it heartbeats on a timer while it runs
   * (src/temporal/worker/keepAlive.ts), so a killed worker is noticed within the heartbeat timeout.
   */
  async function withBooth<T>(fn: (booth: ShadowBooth) => Promise<T>): Promise<T> {
    if (!runtime) throw new BoothNotConfiguredError('workspace');
    const run = activityRun();
    const booth = await runtime.open(run.workflowId, run.runId);
    try {
      return await fn(booth);
    } finally {
      await booth.close();
    }
  }

  const record = (kind: 'commit' | 'rollback', payload: Record<string, unknown>) =>
    currentActivityTape()?.effect(kind, () => payload);

  return {
    /** Runs the named gates over the staged change set. Verdicts come back; the workflow decides. */
    /** `gateParams`: the run's settings for its gates (a what-if experiment's), absent for an ordinary run. */
    async boothVerify(
      input: BoothStepInput & { gates: string[]; gateParams?: GateParams },
    ): Promise<VerifyReport> {
      return withBooth(async (booth) => {
        const changes = await booth.changeSet();
        const verdicts = await runGates(input.gates, runtime!.gates, changes, input.gateParams);
        // The change set exactly as the gates judged it (diffs, statements, calls), beside their verdicts:
        // offline replay runs the project's gates on it again and compares what staging would produce with it.
        const tape = currentActivityTape();
        tape?.effect('commit', async (s) => ({
          part: 'verify',
          gates: input.gates,
          ...(input.gateParams ? { gateParams: input.gateParams } : {}),
          verdicts,
          changes: await s.putValue(tape.redact(changes), tape.step),
        }));
        return { staged: summarize(changes), verdicts };
      });
    },

    async boothCommitFiles(_input: BoothStepInput): Promise<FilesCommitReport> {
      return withBooth(async (booth) => {
        const report = await booth.commitFiles();
        record('commit', {
          part: 'files',
          steps: report.steps,
          recovered: report.recovered,
          changes: report.changes,
        });
        return report;
      });
    },

    async boothCompensateFiles(_input: BoothStepInput): Promise<{ restored: number }> {
      return withBooth(async (booth) => {
        const out = await booth.compensateFiles();
        record('rollback', { part: 'files', compensation: true, restored: out.restored });
        return out;
      });
    },

    async boothCommitSql(_input: BoothStepInput): Promise<SqlCommitResult | null> {
      return withBooth(async (booth) => {
        const result = await booth.commitSql();
        if (result) record('commit', { part: 'sql', ...result });
        return result;
      });
    },

    /** Without `result`: the SQL part failed; undoes what it applied before failing, if anything. */
    async boothCompensateSql(input: BoothStepInput & { result?: SqlCommitResult }): Promise<void> {
      await withBooth(async (booth) => {
        const out = await booth.compensateSql(input.result);
        if (out !== null) record('rollback', { part: 'sql', compensation: true, commitId: out.commitId });
      });
    },

    async boothCommitMcp(_input: BoothStepInput): Promise<McpCommitResult> {
      return withBooth(async (booth) => {
        const result = await booth.mcp.commit();
        record('commit', {
          part: 'mcp',
          applied: result.applied,
          skipped: result.skipped,
          calls: result.calls.map((c) => `${c.server}/${c.tool}`),
        });
        return result;
      });
    },

    async boothCompensateMcp(_input: BoothStepInput): Promise<McpCompensateResult> {
      return withBooth(async (booth) => {
        const out = await booth.mcp.compensate();
        record('rollback', { part: 'mcp', compensation: true, ...out });
        return out;
      });
    },

    /** Every part is durable: the staging area goes away and the commit as a whole is recorded. */
    async boothFinish(
      input: BoothStepInput & { staged: StagedSummary; verdicts: GateVerdict[] },
    ): Promise<void> {
      await withBooth(async (booth) => {
        await runtime!.faultPoint('finish:before');
        await booth.removeStaging();
        record('commit', { part: 'all', staged: input.staged, verdicts: input.verdicts });
      });
    },

    /**
     * Discards everything the run staged and records why. Idempotent; with no booth on the worker it does
     * nothing, so every failed run can call it.
     */
    /** `stagedOnly`: a what-if experiment's commit whose gates passed, discarded instead of applied. */
    async boothRollback(
      input: BoothStepInput & { reason: string; stagedOnly?: true },
    ): Promise<RollbackReport> {
      if (!runtime) return { booth: false, discarded: EMPTY, reason: input.reason };
      return withBooth(async (booth) => {
        let discarded = EMPTY;
        try {
          discarded = summarize(await booth.changeSet());
        } catch {
          // A half-committed or damaged part cannot be listed; discarding it is still the right thing.
        }
        const { mcpSent } = await booth.discard();
        // Calls a commit had already sent reached their servers: the rollback says so (they are kept on disk too).
        record('rollback', {
          part: 'all',
          reason: input.reason,
          ...(input.stagedOnly ? { stagedOnly: true } : {}),
          discarded,
          ...(mcpSent.length > 0 ? { mcpSent } : {}),
        });
        return { booth: true, discarded, reason: input.reason };
      });
    },
  };
}

export type CommitActivities = ReturnType<typeof createCommitActivities>;
