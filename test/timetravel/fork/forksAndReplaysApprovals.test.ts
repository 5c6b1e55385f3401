/**
 * A person's decisions in time travel: offline replay answers each wait from the tape (an approved or rejected
 * gate, a tool call approved with edited arguments, an MCP call rejected, deadlines that passed with either
 * onTimeout), with no network; a fork after the approval step takes the parent's decision over without asking,
 * a fork at or before it asks again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AccountingInput,
  type AccountingOutput,
  accountingAgent,
} from '../../../examples/accounting/agent';
import { gates } from '../../../examples/accounting/gates';
import type { AgentDefinition } from '../../../src/agent';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import {
  approve,
  listApprovals,
  pendingApproval,
  reject,
  startAgent,
  startFork,
  waitForApproval,
} from '../../../src/temporal';
import { readTimeline, replayTape } from '../../../src/timetravel/replay';
import { type AccountingWorld, accountingWorld } from '../../support/accountingWorld';
import {
  type ApprovalScenario,
  type ApprovalScenarioResult,
  approvalTools,
} from '../../temporal/workflow/fixtures/approvalWorkflows';
import { boothTools } from '../../temporal/workflow/fixtures/boothTools';
import { createEraseServer } from '../../temporal/workflow/fixtures/eraseServer';

const WORKFLOWS = path.join(__dirname, 'fixtures/approvalForkWorkflows.ts');
const ASKED_REFUND = 'Refund $750 to customer C-2002: service outage credit, for a person to approve.';

describe('decisions in replay and forks', () => {
  let world: AccountingWorld;
  let model: AccountingWorld['model'];
  let tapes: string;
  let env: AccountingWorld['env'];

  beforeAll(async () => {
    world = await accountingWorld('approval-timetravel', {
      workflowsPath: WORKFLOWS,
      tools: (demo) => boothTools(demo.database),
      booth: (config, base) => ({
        ...config,
        mcpServers: [
          ...(config.mcpServers ?? []),
          {
            name: 'erase',
            transport: {
              kind: 'in-process',
              createServer: () => createEraseServer(path.join(base, 'erased')),
            },
          },
        ],
      }),
    });
    ({ model, tapes, env } = world);
  });

  afterAll(async () => {
    await world?.close();
  });

  const where = () => ({ connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue });
  const tapeFile = async (h: { workflowId: string; describe(): Promise<{ runId: string }> }) =>
    path.join(tapes, tapeFileName(h.workflowId, (await h.describe()).runId));
  const tools = (scenario: ApprovalScenario) =>
    startAgent<ApprovalScenario, ApprovalScenarioResult>('approvalToolsAgent', scenario, {
      ...where(),
      breaker: false,
    });
  const replay = (file: string, agent: AgentDefinition<never, unknown>) =>
    replayTape(file, { agent: agent as AgentDefinition<unknown, unknown>, gates });

  it('offline replay answers every decision from the tape', async () => {
    // A gate's ask, approved and rejected.
    const approved = await startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: ASKED_REFUND, approval: {} },
      where(),
    );
    await waitForApproval(approved);
    // While it waits, a run of another workflow asks too: the namespace's listing has both, each with its type.
    const edited = await tools({
      calls: [{ tool: 'stage_file', args: { path: 'memo.txt', content: 'draft' }, approval: true }],
      commit: true,
    });
    await waitForApproval(edited);
    const client = new Client({ connection: env.connection, namespace: env.namespace });
    await expect
      .poll(
        async () =>
          (await listApprovals(client))
            .filter((p) => p.workflowId === approved.workflowId || p.workflowId === edited.workflowId)
            .map((p) => [p.workflowId, p.workflowType, p.kind])
            .sort(),
        { timeout: 15_000 },
      )
      .toEqual(
        [
          [approved.workflowId, 'accountingAgent', 'commit'],
          [edited.workflowId, 'approvalToolsAgent', 'tool'],
        ].sort(),
      );
    await approve(approved, { by: 'reviewer', note: 'fine' });
    await approved.result();
    const rejected = await startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: ASKED_REFUND, approval: {} },
      where(),
    );
    await waitForApproval(rejected);
    await reject(rejected, { by: 'reviewer', reason: 'not this month' });
    await rejected.result();
    // A tool call approved with edited arguments; an MCP call rejected.
    await approve(edited, { by: 'editor', args: { path: 'memo.txt', content: 'final' } });
    await edited.result();
    const erased = await tools({
      calls: [
        { tool: 'stage_mcp', args: { server: 'erase', tool: 'erase_entry', arguments: { id: 'E-9' } } },
      ],
      commit: true,
    });
    await waitForApproval(erased);
    await reject(erased, { by: 'owner', reason: 'keep it' });
    await erased.result();

    // Nothing below reaches the model: replay is offline.
    const served = model.requestCount();
    const a = await replay(await tapeFile(approved), accountingAgent as never);
    expect(a).toMatchObject({ status: 'match', divergence: null });
    expect(a.output).toMatchObject({
      committed: true,
      report: { approval: { outcome: 'approved', by: 'reviewer' } },
    });
    const r = await replay(await tapeFile(rejected), accountingAgent as never);
    expect(r).toMatchObject({ status: 'match', divergence: null });
    expect(r.output).toMatchObject({ committed: false, reason: 'rejected by reviewer: not this month' });
    const e = await replay(await tapeFile(edited), approvalTools as never);
    expect(e).toMatchObject({ status: 'match', divergence: null });
    const x = await replay(await tapeFile(erased), approvalTools as never);
    expect(x).toMatchObject({ status: 'match', divergence: null });
    expect((x.output as ApprovalScenarioResult).results[0]).toMatchObject({ error: 'APPROVAL_REJECTED' });
    expect(model.requestCount()).toBe(served);

    const t = readTimeline(await tapeFile(edited));
    expect(t.approvals).toEqual([
      expect.objectContaining({
        id: 's0-1',
        step: 0,
        kind: 'tool',
        outcome: expect.objectContaining({
          outcome: 'approved',
          by: 'editor',
          args: { path: 'memo.txt', content: 'final' },
        }),
      }),
    ]);
    // The tape's decision is what replay hands the agent: code that now asks with other arguments diverges there.
    const changed = await replayTape(await tapeFile(edited), {
      agent: {
        ...approvalTools,
        run: (ctx, input: ApprovalScenario) =>
          approvalTools.run(ctx, {
            ...input,
            calls: input.calls.map((c) => ({ ...c, args: { ...c.args, content: 'another draft' } })),
          }),
      } as AgentDefinition<unknown, unknown>,
    });
    expect(changed.divergence).toMatchObject({ step: 0, kind: 'approval.request', fields: ['args.content'] });
  });

  it('offline replay answers a deadline that passed, both ways, with the words the run got live', async () => {
    // A gate's ask nobody decided: 'refuse' refuses at verify, 'rollback' rolls back as a rejection would.
    const gate = (approval: AccountingInput['approval']) =>
      startAgent<AccountingInput, AccountingOutput>(
        'accountingAgent',
        { request: ASKED_REFUND, approval },
        where(),
      );
    const refusedGate = await gate({ timeout: 1_500, onTimeout: 'refuse' });
    const rolledGate = await gate({ timeout: '2s' });
    // A tool call nobody decided, after a call that staged: 'refuse' keeps the staging, 'rollback' drops it.
    const toolCalls = (onTimeout: 'refuse' | 'rollback') =>
      tools({
        calls: [
          { tool: 'stage_file', args: { path: `before-${onTimeout}.txt`, content: 'staged first' } },
          {
            tool: 'stage_file',
            args: { path: `asked-${onTimeout}.txt`, content: 'never' },
            approval: { timeout: '1s', onTimeout },
          },
        ],
        commit: true,
      });
    const refusedTool = await toolCalls('refuse');
    const rolledTool = await toolCalls('rollback');
    const live = {
      refusedGate: (await refusedGate.result()).output,
      rolledGate: (await rolledGate.result()).output,
      refusedTool: (await refusedTool.result()).output,
      rolledTool: (await rolledTool.result()).output,
    };
    expect(live.refusedGate).toMatchObject({
      committed: false,
      verdicts: [
        {
          gate: 'refund-approval',
          ok: false,
          reason: expect.stringMatching(/nobody approved it within 1500ms$/),
        },
      ],
    });
    expect(live.rolledGate).toMatchObject({
      committed: false,
      reason: expect.stringMatching(/^nobody approved it before its deadline \(approval s\d+-1\)/),
      approval: { outcome: 'timedOut', onTimeout: 'rollback' },
    });
    expect(live.refusedTool.results[1]).toMatchObject({
      error: 'APPROVAL_TIMED_OUT',
      message:
        'nobody decided on the call of tool stage_file within 1s; it did not run (what the run staged before stays staged)',
    });
    expect(live.rolledTool.results[1]).toMatchObject({
      error: 'APPROVAL_TIMED_OUT',
      message:
        'nobody decided on the call of tool stage_file within 1s; it did not run, and what the run had staged was rolled back',
    });

    const landed = (f: string) => fs.existsSync(path.join(world.demo.workspace, f));
    expect([landed('before-refuse.txt'), landed('asked-refuse.txt')]).toEqual([true, false]);
    expect([landed('before-rollback.txt'), landed('asked-rollback.txt')]).toEqual([false, false]);

    const served = model.requestCount();
    for (const [name, handle, agent] of [
      ['refusedGate', refusedGate, accountingAgent],
      ['rolledGate', rolledGate, accountingAgent],
      ['refusedTool', refusedTool, approvalTools],
      ['rolledTool', rolledTool, approvalTools],
    ] as const) {
      const r = await replay(await tapeFile(handle), agent as never);
      expect(r, name).toMatchObject({ status: 'match', divergence: null });
      expect(r.output, name).toEqual(live[name]);
    }
    expect(model.requestCount()).toBe(served);
  });

  it('a fork after the approval step takes the decision over; a fork at it or before it asks again', async () => {
    const parent = await tools({
      calls: [
        { tool: 'stage_file', args: { path: 'notes.txt', content: 'notes' } },
        { tool: 'stage_file', args: { path: 'plan.txt', content: 'draft plan' }, approval: true },
        { tool: 'stage_file', args: { path: 'summary.txt', content: 'summary' } },
      ],
      commit: true,
    });
    expect(await waitForApproval(parent)).toMatchObject({ id: 's1-1', step: 1 });
    await approve(parent, { by: 'lead', args: { path: 'plan.txt', content: 'approved plan' } });
    await parent.result();
    const parentTape = await tapeFile(parent);

    // Forked at step 2: steps 0 and 1, and the decision at step 1, come from the parent; nothing waits for anyone.
    const after = await startFork({ parentTape, atStep: 2, ...where() });
    const out = (await after.handle.result()) as { output: ApprovalScenarioResult };
    expect(out.output.results).toEqual([{ output: 'staged' }, { output: 'staged' }, { output: 'staged' }]);
    expect(await pendingApproval(after.handle)).toBeNull();
    const forkTape = readTape(path.join(tapes, tapeFileName(after.workflowId, after.runId)));
    const frames = forkTape.frames
      .filter((f) => f.kind === 'approval')
      .map((f) => f.payload as Record<string, unknown>);
    expect(frames).toEqual([
      expect.objectContaining({
        event: 'decision',
        id: 's1-1',
        by: 'lead',
        inheritedFrom: readTape(parentTape).header.tapeId,
      }),
    ]);
    expect(
      forkTape.frames.filter((f) => f.kind === 'tool.call').map((f) => (f.payload as { args: unknown }).args),
    ).toEqual([
      { path: 'notes.txt', content: 'notes' },
      { path: 'plan.txt', content: 'approved plan' },
      { path: 'summary.txt', content: 'summary' },
    ]);
    // The fork's own tape replays offline too, its inherited decision answered from it.
    expect(
      await replay(path.join(tapes, tapeFileName(after.workflowId, after.runId)), approvalTools as never),
    ).toMatchObject({
      status: 'match',
    });

    // Forked at the approval's step, or before it: that step runs live, so it asks again, with the arguments as
    // the agent asks them, and nothing of the parent's decision is taken over.
    for (const [atStep, verdict] of [
      [1, 'reject'],
      [0, 'approve'],
    ] as const) {
      const fork = await startFork({ parentTape, atStep, ...where() });
      const asked = await waitForApproval(fork.handle);
      expect(asked, `fork at ${atStep}`).toMatchObject({
        id: 's1-1',
        step: 1,
        kind: 'tool',
        subject: { args: { path: 'plan.txt', content: 'draft plan' } },
      });
      if (verdict === 'reject') await reject(fork.handle, { by: 'lead', reason: 'not again' });
      else await approve(fork.handle, { by: 'second-reviewer' });
      const result = ((await fork.handle.result()) as { output: ApprovalScenarioResult }).output;
      const tape = readTape(path.join(tapes, tapeFileName(fork.workflowId, fork.runId)));
      const decisions = tape.frames
        .filter((f) => f.kind === 'approval')
        .map((f) => f.payload as Record<string, unknown>);
      expect(
        decisions.map((d) => [d.event, d.id, d.by ?? null, d.inheritedFrom ?? null]),
        `fork at ${atStep}`,
      ).toEqual([
        ['request', 's1-1', null, null],
        ['decision', 's1-1', verdict === 'reject' ? 'lead' : 'second-reviewer', null],
      ]);
      if (verdict === 'reject') expect(result.results[1]).toMatchObject({ error: 'APPROVAL_REJECTED' });
      else {
        expect(result.results).toEqual([{ output: 'staged' }, { output: 'staged' }, { output: 'staged' }]);
        // Approved as asked: the draft, not the parent's edited plan, is what this timeline staged.
        expect(
          tape.frames
            .filter((f) => f.kind === 'tool.call')
            .map((f) => (f.payload as { args: { path: string; content: string } }).args)
            .find((a) => a.path === 'plan.txt'),
        ).toEqual({ path: 'plan.txt', content: 'draft plan' });
      }
    }
  });
});
