/**
 * A gate that answers needsApproval: the commit waits (no activity running) for a person's decision, taken as a
 * Temporal update; approved it commits, rejected or timed out it rolls back through the compensation path and
 * the real ledger, table and outbox hash exactly as before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingInput, AccountingOutput } from '../../../examples/accounting/agent';
import {
  type AccountingDemo,
  fingerprint,
  readBalance,
  tablesDigest,
} from '../../../examples/accounting/demo';
import { readOutbox } from '../../../examples/accounting/notifyServer';
import type { ApprovalDecisionInput } from '../../../src/agent';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import {
  ApprovalDeciderRefusedError,
  ApprovalDecisionInvalidError,
  ApprovalNotPendingError,
  approvalQuery,
  approve,
  decideUpdate,
  decisionSignal,
  listApprovals,
  pendingApproval,
  reject,
  startAgent,
  waitForApproval,
} from '../../../src/temporal';
import { type AccountingWorld, accountingWorld } from '../../support/accountingWorld';
import { runJbx } from '../../timetravel/replay/jbx';

const REFUND_750 = 'Refund $750 to customer C-2002: service outage credit.';

describe('a gate that asks a person', () => {
  let world: AccountingWorld;
  let demo: AccountingDemo;
  let tapes: string;
  let env: AccountingWorld['env'];

  beforeAll(async () => {
    world = await accountingWorld('approval-gate');
    ({ demo, tapes, env } = world);
  });

  afterAll(async () => {
    await world?.close();
  });

  const start = (approval: AccountingInput['approval']) =>
    startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: REFUND_750, approval },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
    );

  const tapeOf = async (handle: Awaited<ReturnType<typeof start>>) =>
    readTape(path.join(tapes, tapeFileName(handle.workflowId, (await handle.describe()).runId)));

  const approvalFrames = (tape: ReturnType<typeof readTape>) =>
    tape.frames.filter((f) => f.kind === 'approval').map((f) => f.payload as Record<string, unknown>);

  it('waits with everything staged, listed with its reason and staged changes, and commits once approved', async () => {
    const balance = await readBalance(demo, 'C-2002');
    const handle = await start({ deciders: ['reviewer'] });
    const pending = await waitForApproval(handle);
    expect(pending).toMatchObject({
      id: expect.stringMatching(/^s\d+-1$/),
      kind: 'commit',
      reason: expect.stringContaining('refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold'),
      deciders: ['reviewer'],
      onTimeout: 'rollback',
    });
    expect(pending.deadlineMs - pending.requestedAtMs).toBe(24 * 3_600_000);
    expect(pending.staged?.files).toEqual([expect.stringContaining('ledger.csv')]);
    expect(pending.staged?.sql).toEqual([expect.stringMatching(/UPDATE accounts SET balance_cents/)]);
    expect(pending.staged?.mcp).toEqual([expect.stringContaining('notify/notify_customer')]);
    // Waiting is a timer in the run's history: no activity pending, nothing polling, the history standing still.
    const before = await handle.fetchHistory();
    await new Promise((r) => setTimeout(r, 3_000));
    const still = await handle.fetchHistory();
    expect(still.events?.length).toBe(before.events?.length);
    expect((await handle.describe()).raw.pendingActivities ?? []).toEqual([]);
    const timers = still.events?.filter((e) => e.timerStartedEventAttributes) ?? [];
    expect(timers.map((e) => Number(e.timerStartedEventAttributes?.startToFireTimeout?.seconds))).toEqual([
      24 * 3600,
    ]);
    // Staged, not applied, while it waits.
    expect(await readBalance(demo, 'C-2002')).toBe(balance);
    expect(readOutbox(demo.outbox).filter((n) => n.customer === 'C-2002')).toEqual([]);
    // Across workflows: the namespace's listing finds it (visibility may lag the memo by a moment).
    await expect
      .poll(
        async () =>
          (await listApprovals(new Client({ connection: env.connection, namespace: env.namespace }))).map(
            (a) => a.workflowId,
          ),
        {
          timeout: 10_000,
        },
      )
      .toContain(handle.workflowId);

    await expect(approve(handle, { by: 'mallory' })).rejects.toBeInstanceOf(ApprovalDeciderRefusedError);
    await expect(reject(handle, { by: 'reviewer', reason: ' ' })).rejects.toBeInstanceOf(
      ApprovalDecisionInvalidError,
    );
    const [first, second] = await Promise.all([
      approve(handle, { by: 'reviewer', note: 'outage confirmed by support' }),
      approve(handle, { by: 'reviewer', note: 'outage confirmed by support' }),
    ]);
    // The same decision id: Temporal hands both callers the one update's outcome.
    expect(first.via).toBe('update');
    expect(second.receipt).toEqual(first.receipt);

    const { output } = await handle.result();
    expect(output.committed).toBe(true);
    if (!output.committed) return;
    expect(output.report.approval).toMatchObject({
      outcome: 'approved',
      by: 'reviewer',
      note: 'outage confirmed by support',
      via: 'update',
    });
    expect(output.report.verdicts).toEqual([
      expect.objectContaining({
        gate: 'refund-approval',
        ok: true,
        needsApproval: true,
        approvedBy: 'reviewer',
      }),
    ]);
    expect(await readBalance(demo, 'C-2002')).toBe(balance + 75_000);
    expect(readOutbox(demo.outbox).filter((n) => n.customer === 'C-2002')).toHaveLength(1);

    // One request, one decision on the tape: the same decision sent twice had one effect.
    const frames = approvalFrames(await tapeOf(handle));
    expect(frames.map((f) => f.event)).toEqual(['request', 'decision']);
    expect(frames[1]).toMatchObject({ id: pending.id, verdict: 'approve', by: 'reviewer', via: 'update' });
    // Deciding again once the run finished is a clear error, not a second commit.
    await expect(approve(handle, { by: 'reviewer' })).rejects.toThrow(
      /already ended \(COMPLETED.*was approved by reviewer/,
    );
  });

  it("the run's own validator refuses what a client did not check, leaving no trace; a refused signal changes nothing", async () => {
    const handle = await start({ deciders: ['reviewer'] });
    const pending = await waitForApproval(handle);
    // Straight to the run, past the client's own checks (as the Temporal CLI or another SDK would send it).
    const raw = new Client({ connection: env.connection, namespace: env.namespace }).workflow.getHandle(
      handle.workflowId,
    );
    const refusedWith = async (d: ApprovalDecisionInput) => {
      const err = await raw.executeUpdate(decideUpdate, { args: [d] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = (err as WorkflowUpdateFailedError).cause as ApplicationFailure;
      return { type: cause.type, message: cause.message };
    };
    const before = (await handle.fetchHistory()).events?.length;
    expect(await refusedWith({ approvalId: pending.id, verdict: 'approve', by: 'mallory' })).toEqual({
      type: 'ApprovalDeciderRefusedError',
      message: `mallory may not decide approval ${pending.id}; its deciders are reviewer`,
    });
    expect(await refusedWith({ approvalId: 's99-1', verdict: 'approve', by: 'reviewer' })).toMatchObject({
      type: 'ApprovalNotPendingError',
      message: expect.stringContaining(
        `the run is not waiting for approval s99-1; it waits for approval ${pending.id}`,
      ),
    });
    expect(await refusedWith({ approvalId: pending.id, verdict: 'reject', by: 'reviewer' })).toEqual({
      type: 'ApprovalDecisionInvalidError',
      message: 'a rejection needs a reason (note)',
    });
    expect(
      await refusedWith({ approvalId: pending.id, verdict: 'approve', by: 'reviewer', args: { cents: 1 } }),
    ).toMatchObject({ type: 'ApprovalDecisionInvalidError' });
    // A validator's refusal is not written to the history.
    expect((await handle.fetchHistory()).events?.length).toBe(before);

    // A signal is in the history at once; the run validates it by the same rules when it takes it.
    await raw.signal(decisionSignal, { approvalId: pending.id, verdict: 'approve', by: 'mallory' });
    await expect
      .poll(async () => (await raw.query(approvalQuery)).refused, { timeout: 15_000 })
      .toEqual([
        {
          decisionId: `${pending.id}/approve/mallory`,
          by: 'mallory',
          reason: expect.stringContaining('mallory may not decide'),
        },
      ]);
    expect((await pendingApproval(handle))?.id).toBe(pending.id);

    await approve(handle, { by: 'reviewer' });
    expect((await handle.result()).output.committed).toBe(true);
  });

  it('rolls back on a rejection: ledger, table and outbox hash exactly as before', async () => {
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const handle = await start({});
    await waitForApproval(handle);
    const decided = await reject(handle, { by: 'reviewer', reason: 'no outage on record' });
    expect(decided.via).toBe('update');
    const { output } = await handle.result();
    expect(output.committed).toBe(false);
    if (output.committed) return;
    expect(output.reason).toBe('rejected by reviewer: no outage on record');
    expect(output.approval).toMatchObject({ outcome: 'rejected', by: 'reviewer' });
    expect(output.discarded?.mcp).toEqual([expect.stringContaining('notify/notify_customer')]);
    expect(await fingerprint(demo)).toEqual(before.files);
    expect(await tablesDigest(demo)).toBe(before.tables);
    const left = fs.readdirSync(demo.staging, { recursive: true });
    expect(left).toEqual([]);
    const tape = await tapeOf(handle);
    expect(approvalFrames(tape).map((f) => f.event)).toEqual(['request', 'decision']);
    const rollbacks = tape.frames.filter((f) => f.kind === 'rollback').map((f) => f.payload);
    expect(rollbacks).toEqual([
      expect.objectContaining({ part: 'all', reason: expect.stringContaining('no outage') }),
    ]);
    // Only the verify step's record of what the gates judged; no part was applied.
    const commits = tape.frames.filter((f) => f.kind === 'commit').map((f) => f.payload as { part: string });
    expect(commits.map((c) => c.part)).toEqual(['verify']);
  });

  it('a run cancelled while it waits ends cancelled, its staging rolled back; nobody can decide it any more', async () => {
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const handle = await start({});
    const pending = await waitForApproval(handle);
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(await fingerprint(demo)).toEqual(before.files);
    expect(await tablesDigest(demo)).toBe(before.tables);
    expect(fs.readdirSync(demo.staging, { recursive: true })).toEqual([]);
    // The request stays in the ended run's memo; it is no longer pending for anyone.
    expect(await pendingApproval(handle)).toBeNull();
    await expect(approve(handle, { by: 'reviewer' })).rejects.toThrow(/already ended \(CANCELED/);
    const tape = await tapeOf(handle);
    expect(approvalFrames(tape)).toEqual([expect.objectContaining({ event: 'request', id: pending.id })]);
    // The commit's own rollback discards the refund; the run's clean-up after the cancellation finds nothing left.
    expect(tape.frames.filter((f) => f.kind === 'rollback').map((f) => f.payload)).toEqual([
      expect.objectContaining({
        part: 'all',
        discarded: expect.objectContaining({ files: [expect.stringContaining('ledger.csv')] }),
      }),
      expect.objectContaining({
        part: 'all',
        reason: 'the run failed: Workflow cancelled',
        discarded: { files: [], sql: [], mcp: [] },
      }),
    ]);
  });

  it('a run the server timed out while it waited: not pending, and `jbx approve` / `jbx reject` exit 1', async () => {
    const client = new Client({ connection: env.connection, namespace: env.namespace });
    const handle = await client.workflow.start('accountingAgent', {
      taskQueue: env.taskQueue,
      workflowId: `approval-run-timeout-${Date.now().toString(36)}`,
      args: [{ request: REFUND_750, approval: {} } satisfies AccountingInput, {}],
      workflowExecutionTimeout: '20s',
    });
    await waitForApproval(handle);
    await expect(handle.result()).rejects.toThrow(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('TIMED_OUT');
    expect(await pendingApproval(handle)).toBeNull();
    const approved = await runJbx(['approve', handle.workflowId, '--by', 'reviewer']);
    expect(approved.code).toBe(1);
    expect(approved.stderr).toMatch(/already ended \(TIMED_OUT at \S+\); there is nothing to decide/);
    const rejected = await runJbx(['reject', handle.workflowId, '--by', 'reviewer', '--reason', 'too late']);
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/already ended \(TIMED_OUT/);
  });

  it("times out: 'rollback' rolls back and the decision that comes late is refused; 'refuse' refuses at the gate", async () => {
    const before = await fingerprint(demo);
    const late = await start({ timeout: '2s' });
    const pending = await waitForApproval(late);
    const { output } = await late.result();
    expect(output.committed).toBe(false);
    if (output.committed) return;
    expect(output.approval).toMatchObject({
      outcome: 'timedOut',
      approvalId: pending.id,
      onTimeout: 'rollback',
    });
    expect(await fingerprint(demo)).toEqual(before);
    await expect(approve(late, { by: 'reviewer' })).rejects.toThrow(ApprovalNotPendingError);
    await expect(approve(late, { by: 'reviewer' })).rejects.toThrow(/timed out at/);
    const cli = await runJbx(['approve', late.workflowId, '--by', 'reviewer']);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/already ended \(COMPLETED.*approval s\d+-1 timed out at/);
    expect(approvalFrames(await tapeOf(late)).map((f) => f.event)).toEqual(['request', 'timeout']);

    const refused = await start({ timeout: 1_500, onTimeout: 'refuse' });
    const out = (await refused.result()).output;
    expect(out.committed).toBe(false);
    if (out.committed) return;
    expect(out.verdicts).toEqual([
      expect.objectContaining({
        gate: 'refund-approval',
        ok: false,
        reason: expect.stringContaining('nobody approved it within 1500ms'),
      }),
    ]);
    expect(await fingerprint(demo)).toEqual(before);
  });
});
