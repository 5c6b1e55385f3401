import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AccountingOutput, accountingAgent } from '../../../examples/accounting/agent';
import { gates, refundThresholdGate } from '../../../examples/accounting/gates';
import { replayWorld } from '../../../examples/accounting/replayWorld';
import { accountingTools, stageRefundTool } from '../../../examples/accounting/tools';
import { type AgentContext, CommitRolledBackError, defineAgent } from '../../../src/agent';
import type { ToolDefinition } from '../../../src/agent/tools';
import { GateRefusedError } from '../../../src/booth/verifiers';
import { ReplayedStepError, readTimeline, replayTape } from '../../../src/timetravel/replay';
import { Restaging } from '../../../src/timetravel/replay/restaging';
import { type AccountingTapes, REJECTION, recordAccountingRuns, VERIFIER_DOWN } from './accountingRuns';
import { runJbx } from './jbx';

type Input = { request: string };

/** The accounting agent, with what ctx.commit threw kept aside. */
function watched(seen: unknown[]) {
  return defineAgent<Input, AccountingOutput>('accountingAgent', (ctx, input) => {
    const c = Object.create(ctx) as AgentContext;
    c.commit = (o) =>
      ctx.commit(o).catch((err: unknown) => {
        seen.push(err);
        throw err;
      });
    return accountingAgent.run(c, input);
  });
}

/** The accounting agent with its commit (step 7) replaced. */
function committingWith(settle: (ctx: AgentContext) => Promise<unknown>) {
  return defineAgent<Input, unknown>('accountingAgent', (ctx, input) => {
    const c = Object.create(ctx) as AgentContext;
    c.commit = () => settle(ctx) as never;
    return accountingAgent.run(c, input);
  });
}

describe('offline replay of runs that commit or roll back', () => {
  let runs: Awaited<ReturnType<typeof recordAccountingRuns>>;
  let tapes: AccountingTapes;

  beforeAll(async () => {
    runs = await recordAccountingRuns();
    tapes = runs.tapes;
    // Nothing below may go live.
    await runs.model.close();
  }, 300_000);
  afterAll(async () => {
    await runs?.close();
  });

  it('reads each commit as a step with what the agent got back', () => {
    const committed = readTimeline(tapes.committed);
    expect(committed.steps).toHaveLength(7);
    expect(committed.booth).toHaveLength(1);
    const c = committed.booth[0]!;
    expect(c).toMatchObject({ step: 7, kind: 'commit', gates: ['refund-threshold'] });
    expect(c.activities.map((a) => a.activityType)).toEqual([
      'boothVerify',
      'boothCommitFiles',
      'boothCommitSql',
      'boothCommitMcp',
      'boothFinish',
    ]);
    expect(c.answer).toEqual({
      type: 'committed',
      report: (committed.outcome!.result as { report: unknown }).report,
    });
    expect(c.changes?.files.map((f) => f.path)).toEqual(['ledger.csv']);

    const refused = readTimeline(tapes.refused).booth[0]!;
    expect(refused.activities.map((a) => a.activityType)).toEqual(['boothVerify', 'boothRollback']);
    expect(refused.answer).toMatchObject({
      type: 'rolled-back',
      part: 'verify',
      verdicts: [
        {
          gate: 'refund-threshold',
          ok: false,
          reason:
            'refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it',
        },
      ],
    });
    // The run's own end-of-run discard is not an agent step.
    expect(readTimeline(tapes.partFailed).booth.map((b) => b.step)).toEqual([7]);
  });

  it('a committed run: ctx.commit returns the recorded report, and the project gates judge the change set alike', async () => {
    const r = await replayTape(tapes.committed, { agent: accountingAgent as never, gates });
    expect(r).toMatchObject({
      status: 'match',
      steps: 8,
      replayed: 8,
      gatesChecked: 1,
      recordedOutcome: 'completed',
      replayedOutcome: 'completed',
    });
    const out = r.output as AccountingOutput;
    expect(out.committed).toBe(true);
    if (out.committed) expect(out.report.mcp).toEqual({ applied: 1, skipped: 0 });
  });

  it("a gate's refusal is thrown as the CommitRolledBackError the agent caught live", async () => {
    const seen: unknown[] = [];
    const r = await replayTape(tapes.refused, { agent: watched(seen) as never, gates });
    expect(r).toMatchObject({ status: 'match', steps: 8, replayed: 8, gatesChecked: 1 });
    expect(seen).toHaveLength(1);
    const err = seen[0] as CommitRolledBackError;
    expect(err).toBeInstanceOf(CommitRolledBackError);
    expect(err.part).toBe('verify');
    expect(err.reason).toBe(
      'commit refused by gate refund-threshold: refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it; nothing was applied and the staged changes were rolled back',
    );
    expect(err.cause).toBeInstanceOf(GateRefusedError);
    expect(err.staged?.sql).toEqual([
      'UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ? [75000,"C-2002"]',
    ]);
    expect((r.output as AccountingOutput).committed).toBe(false);
  });

  it('a run rolled back after a verifier failed replays, with the failed verdict as recorded', async () => {
    const seen: unknown[] = [];
    const r = await replayTape(tapes.verifierFailed, { agent: watched(seen) as never });
    expect(r).toMatchObject({ status: 'match', steps: 8, replayed: 8, gatesChecked: 0 });
    expect((seen[0] as CommitRolledBackError).verdicts).toEqual([
      { gate: 'refund-threshold', ok: false, reason: `the gate itself failed (${VERIFIER_DOWN})` },
    ]);
    // Judged again by the project's working gate, the same change set passes: that is a divergence.
    const again = await replayTape(tapes.verifierFailed, { agent: accountingAgent as never, gates });
    expect(again.divergence).toMatchObject({
      step: 7,
      kind: 'commit.verdicts',
      fields: ['verdicts[0].ok', 'verdicts[0].reason'],
      expected: { 'verdicts[0].ok': false },
      actual: { 'verdicts[0].ok': true },
    });
  });

  it('a commit whose MCP part failed replays: the compensated rollback is thrown again and the run fails as recorded', async () => {
    const seen: unknown[] = [];
    const r = await replayTape(tapes.partFailed, { agent: watched(seen) as never, gates });
    expect(r).toMatchObject({
      status: 'match',
      recordedOutcome: 'failed',
      replayedOutcome: 'failed',
      steps: 8,
      replayed: 8,
    });
    const err = seen[0] as CommitRolledBackError;
    expect(err.part).toBe('mcp');
    expect(err.reason).toBe(
      'McpToolFailedError: MCP tool notify/notify_customer failed: customer C-1001 cannot be reached: no contact on file',
    );
    expect(err.cause).toBeInstanceOf(ReplayedStepError);
    expect(r.error).toContain('committing mcp failed');
  });

  it("a raised refund threshold diverges at the commit step, naming the gate's verdict", async () => {
    const r = await replayTape(tapes.refused, {
      agent: accountingAgent as never,
      gates: { 'refund-threshold': refundThresholdGate(100_000) },
    });
    const frame = readTimeline(tapes.refused).booth[0]!.changesFrame;
    expect(r.status).toBe('diverged');
    expect(r.replayed).toBe(7);
    expect(r.divergence).toEqual({
      step: 7,
      frame,
      kind: 'commit.verdicts',
      fields: ['verdicts[0].ok', 'verdicts[0].reason'],
      expected: {
        'verdicts[0].ok': false,
        'verdicts[0].reason':
          'refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it',
      },
      actual: {
        'verdicts[0].ok': true,
        'verdicts[0].reason': '1 refund(s) totalling $750.00, each within the $1000.00 autonomous threshold',
      },
    });
    const lowered = await replayTape(tapes.committed, {
      agent: accountingAgent as never,
      gates: { 'refund-threshold': refundThresholdGate(10_000) },
    });
    expect(lowered.divergence).toMatchObject({
      step: 7,
      kind: 'commit.verdicts',
      actual: { 'verdicts[0].ok': false },
    });
  });

  it('a commit naming other gates, or a rollback instead of the commit, diverges at step 7', async () => {
    const more = await replayTape(tapes.committed, {
      agent: committingWith((ctx) => ctx.commit({ gates: ['refund-threshold', 'ledger-only'] })) as never,
    });
    expect(more.divergence).toMatchObject({
      step: 7,
      kind: 'commit',
      fields: ['gates[1]'],
      expected: { 'gates[1]': undefined },
      actual: { 'gates[1]': 'ledger-only' },
    });
    const instead = await replayTape(tapes.committed, {
      agent: committingWith((ctx) => ctx.rollback('changed my mind')) as never,
    });
    expect(instead.divergence).toMatchObject({
      step: 7,
      kind: 'commit',
      fields: ['kind'],
      expected: { kind: 'commit', gates: ['refund-threshold'] },
      actual: { kind: 'rollback', reason: 'changed my mind' },
    });
  });

  /** Replays a tape with the given tools staging again in a fresh copy of the demo world. */
  async function restaged(tape: string, tools: ToolDefinition[]) {
    const h = readTimeline(tape).tape.header;
    const staging = await Restaging.open(tools, replayWorld, { workflowId: h.workflowId, runId: h.runId });
    try {
      return await replayTape(tape, { agent: accountingAgent as never, gates, staging });
    } finally {
      await staging.close();
    }
  }

  it("today's tools stage again in a scratch booth: the same staging matches, a tool that stages otherwise diverges at the commit", async () => {
    for (const tape of [tapes.committed, tapes.refused]) {
      const same = await restaged(tape, accountingTools);
      expect(same, JSON.stringify(same.divergence)).toMatchObject({
        status: 'match',
        stagingChecked: 1,
        gatesChecked: 1,
      });
    }
    // A units bug in the tool: dollars taken for cents. The agent's calls are unchanged; what it stages is not.
    const inDollars: ToolDefinition = {
      ...stageRefundTool,
      run: (args, invocation) =>
        stageRefundTool.run({ ...args, amount_cents: (args.amount_cents as number) * 100 }, invocation),
    };
    const r = await restaged(
      tapes.committed,
      accountingTools.map((t) => (t === stageRefundTool ? inDollars : t)),
    );
    const sql = 'sql[0] UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?';
    expect(r.status).toBe('diverged');
    expect(r.divergence).toMatchObject({
      step: 7,
      kind: 'commit.staged',
      fields: ['file ledger.csv', sql, 'mcp[0] notify/notify_customer'],
      expected: {
        'file ledger.csv': { op: 'write', lines: ['+2026-12-02,C-1001,refund,12000,duplicate charge'] },
        [sql]: { params: [12000, 'C-1001'] },
      },
      actual: {
        'file ledger.csv': { op: 'write', lines: ['+2026-12-02,C-1001,refund,1200000,duplicate charge'] },
        [sql]: { params: [1200000, 'C-1001'] },
      },
    });
  });

  it('a commit that waited for a person replays with the recorded decision: approved commits, rejected rolls back', async () => {
    const approved = await replayTape(tapes.approved, { agent: accountingAgent as never });
    expect(approved).toMatchObject({ status: 'match', steps: 8, replayed: 8 });
    const out = approved.output as AccountingOutput;
    expect(out.committed).toBe(true);
    if (out.committed) {
      expect(out.report.approval).toMatchObject({ outcome: 'approved', by: 'reviewer' });
      expect(out.report.verdicts).toEqual([
        expect.objectContaining({ gate: 'refund-approval', ok: true, approvedBy: 'reviewer' }),
      ]);
    }
    const seen: unknown[] = [];
    const rejected = await replayTape(tapes.rejected, { agent: watched(seen) as never });
    expect(rejected).toMatchObject({ status: 'match', steps: 8, replayed: 8 });
    const err = seen[0] as CommitRolledBackError;
    expect(err.part).toBe('approval');
    expect(err.approval).toMatchObject({ outcome: 'rejected', by: 'reviewer', note: REJECTION });
    expect(err.reason).toBe(`rejected by reviewer: ${REJECTION}`);
  });

  it('runs that rolled back, packed by jbx bundle with no network, replay from an empty folder under unshare -n', {
    timeout: 300_000,
  }, async () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'jbx-booth-bundles-'));
    try {
      const bundles = path.join(work, 'bundles');
      mkdirSync(bundles);
      // The runs that rolled back (the quickstart's own tapes are bundled by the quickstart's test).
      const names: (keyof AccountingTapes)[] = ['partFailed', 'rejected', 'verifierFailed'];
      for (const name of names) {
        const b = await runJbx(['bundle', tapes[name], '-o', path.join(bundles, `${name}.jbxb`)], {
          offline: true,
          cwd: work,
        });
        expect(b.code, b.stderr).toBe(0);
      }
      const r = await runJbx(['replay', '.', '--json'], { offline: true, cwd: bundles });
      const report = JSON.parse(r.stdout) as {
        results: {
          file: string;
          status: string;
          steps: number;
          replayed: number;
          recordedOutcome: string;
          code: { source: string };
        }[];
      };
      expect(r.code, r.stderr).toBe(0);
      expect(
        report.results.map((x) => [
          path.basename(x.file, '.jbxb'),
          x.status,
          x.replayed,
          x.steps,
          x.recordedOutcome,
          x.code.source,
        ]),
      ).toEqual(
        names.map((name) => [name, 'match', 8, 8, name === 'partFailed' ? 'failed' : 'completed', 'bundle']),
      );
      // The verifier's failure comes back from the bundle as the run saw it.
      const one = await runJbx(['replay', 'verifierFailed.jbxb', '--json'], { offline: true, cwd: bundles });
      expect(one.code, one.stderr).toBe(0);
      expect(JSON.parse(one.stdout).output).toMatchObject({
        committed: false,
        verdicts: [
          { gate: 'refund-threshold', ok: false, reason: `the gate itself failed (${VERIFIER_DOWN})` },
        ],
      });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
