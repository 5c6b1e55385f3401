/**
 * Tool calls that wait for a person before they run or are escrowed: asked by ctx.tool's approval option, by
 * the tool's definition, or by an MCP call the operator lists or the server marks destructive. An approval may
 * edit the arguments (the edited call is what runs and what the tape records); a rejection rolls the run's
 * staging back and the agent sees ApprovalRejectedError; a timeout with onTimeout 'refuse' refuses only the call.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AccountingDemo,
  fingerprint,
  prepareAccountingDemo,
  readBalance,
  tablesDigest,
} from '../../../examples/accounting/demo';
import { createNotifyServer, readOutbox } from '../../../examples/accounting/notifyServer';
import { requireString, type ToolDefinition } from '../../../src/agent/tools';
import { BoothRuntime, requireBooth } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import {
  ApprovalDeciderRefusedError,
  approve,
  pendingApproval,
  reject,
  startAgent,
  waitForApproval,
} from '../../../src/temporal';
import { connectTestWorker } from '../../support/temporal';
import type { ApprovalScenario, ApprovalScenarioResult } from './fixtures/approvalWorkflows';
import { boothTools } from './fixtures/boothTools';
import { createEraseServer } from './fixtures/eraseServer';

const WORKFLOWS = path.join(__dirname, 'fixtures/approvalWorkflows.ts');

/** Every transfer waits for the treasurer, whoever calls it. */
const transferTool: ToolDefinition = {
  spec: { name: 'transfer', description: 'move money', parameters: { type: 'object', properties: {} } },
  approval: { reason: 'transfers move money', deciders: ['treasurer'] },
  async run(args, inv) {
    const sql = await requireBooth(inv, 'transfer').sql();
    const r = await sql.query('UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?', [
      Number(args.cents),
      requireString('transfer', args, 'customer'),
    ]);
    return `moved ${args.cents} (${r.rowsAffected} row)`;
  },
};

describe('tool calls that wait for a person', () => {
  let base: string;
  let demo: AccountingDemo;
  let erased: string;
  let tapes: string;
  let booth: BoothRuntime;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-approval-tools-'));
    tapes = path.join(base, 'tapes');
    demo = await prepareAccountingDemo(path.join(base, 'demo'));
    erased = path.join(base, 'erased.txt');
    booth = new BoothRuntime({
      workspaceRoot: demo.workspace,
      stagingRoot: demo.staging,
      sqlite: demo.database,
      mcpServers: [
        {
          name: 'notify',
          transport: { kind: 'in-process', createServer: () => createNotifyServer({ outbox: demo.outbox }) },
          // The server calls it harmless; the operator wants a person to see every notification first.
          approvalTools: ['notify_customer'],
        },
        { name: 'erase', transport: { kind: 'in-process', createServer: () => createEraseServer(erased) } },
      ],
    });
    env = await connectTestWorker({
      endpoints: localEndpoints('http://127.0.0.1:9'),
      tools: [...boothTools(demo.database), transferTool],
      workflowsPath: WORKFLOWS,
      booth,
      tape: { dir: tapes },
    });
  });

  afterAll(async () => {
    await env?.close();
    await booth?.close();
  });

  const start = (scenario: ApprovalScenario) =>
    startAgent<ApprovalScenario, ApprovalScenarioResult>('approvalToolsAgent', scenario, {
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      breaker: false,
    });

  const tapeOf = async (handle: Awaited<ReturnType<typeof start>>) =>
    readTape(path.join(tapes, tapeFileName(handle.workflowId, (await handle.describe()).runId)));

  const kinds = (tape: ReturnType<typeof readTape>, kind: string) =>
    tape.frames.filter((f) => f.kind === kind).map((f) => f.payload as Record<string, unknown>);

  it("ctx.tool's approval: the person's edited arguments are what runs, commits and is on the tape", async () => {
    const handle = await start({
      calls: [
        {
          tool: 'stage_file',
          args: { path: 'memo.txt', content: 'draft: pay everyone twice' },
          approval: { reason: 'the agent writes the memo' },
        },
      ],
      commit: true,
    });
    const pending = await waitForApproval(handle);
    expect(pending).toMatchObject({
      kind: 'tool',
      reason: 'the agent writes the memo',
      subject: { tool: 'stage_file', args: { path: 'memo.txt', content: 'draft: pay everyone twice' } },
    });
    // Nothing ran yet: not even staged.
    expect(pending.staged).toBeUndefined();
    await approve(handle, { by: 'editor', args: { path: 'memo.txt', content: 'pay everyone once' } });
    const out = (await handle.result()).output;
    expect(out.results).toEqual([{ output: 'staged' }]);
    expect(fs.readFileSync(path.join(demo.workspace, 'memo.txt'), 'utf8')).toBe('pay everyone once');
    const tape = await tapeOf(handle);
    expect(kinds(tape, 'tool.call').map((p) => p.args)).toEqual([
      { path: 'memo.txt', content: 'pay everyone once' },
    ]);
    expect(kinds(tape, 'approval').map((p) => [p.event, p.args ?? null])).toEqual([
      ['request', null],
      ['decision', { path: 'memo.txt', content: 'pay everyone once' }],
    ]);
  });

  it('a tool whose definition asks: nothing runs until its decider approves; others are refused', async () => {
    const balance = await readBalance(demo, 'C-1001');
    const handle = await start({
      calls: [{ tool: 'transfer', args: { customer: 'C-1001', cents: 500 } }],
      commit: true,
    });
    const pending = await waitForApproval(handle);
    expect(pending).toMatchObject({ kind: 'tool', reason: 'transfers move money', deciders: ['treasurer'] });
    await expect(approve(handle, { by: 'intern' })).rejects.toBeInstanceOf(ApprovalDeciderRefusedError);
    await approve(handle, { by: 'treasurer', note: 'budgeted' });
    const out = (await handle.result()).output;
    expect(out.results).toEqual([{ output: 'moved 500 (1 row)' }]);
    expect(await readBalance(demo, 'C-1001')).toBe(balance + 500);
    // The step that asked ran no tool: one tool.call on the tape, from the run after the approval.
    expect(kinds(await tapeOf(handle), 'tool.call')).toHaveLength(1);
  });

  it('an MCP call the operator lists waits before it is escrowed; the edited call is what is sent at commit', async () => {
    const handle = await start({
      calls: [
        {
          tool: 'stage_mcp',
          args: {
            server: 'notify',
            tool: 'notify_customer',
            arguments: {
              customer: 'C-1001',
              message: 'your refund is on its way!!!',
              notificationId: 'n-77',
            },
          },
        },
      ],
      commit: true,
    });
    const pending = await waitForApproval(handle);
    expect(pending).toMatchObject({
      kind: 'mcp',
      subject: {
        server: 'notify',
        tool: 'notify_customer',
        args: { customer: 'C-1001', notificationId: 'n-77' },
      },
      reason: expect.stringContaining('the operator requires a person to approve notify/notify_customer'),
    });
    await approve(handle, {
      by: 'support',
      args: { customer: 'C-1001', message: 'Your refund is on its way.', notificationId: 'n-77' },
    });
    await handle.result();
    expect(readOutbox(demo.outbox).filter((n) => n.id === 'n-77')).toEqual([
      { id: 'n-77', customer: 'C-1001', message: 'Your refund is on its way.' },
    ]);
    const escrowed = kinds(await tapeOf(handle), 'mcp.call').filter((p) => p.escrowed === true);
    expect(escrowed.map((p) => (p.params as { arguments: { message: string } }).arguments.message)).toEqual([
      'Your refund is on its way.',
    ]);
  });

  it('a destructive MCP call rejected: it never runs, the staging before it is rolled back, the agent goes on', async () => {
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const handle = await start({
      calls: [
        { tool: 'stage_file', args: { path: 'notes.txt', content: 'to be erased' } },
        { tool: 'stage_mcp', args: { server: 'erase', tool: 'erase_entry', arguments: { id: 'E-1' } } },
      ],
      commit: true,
    });
    const pending = await waitForApproval(handle);
    expect(pending).toMatchObject({ kind: 'mcp', reason: expect.stringContaining('marked destructive') });
    expect(pending.staged?.files).toEqual([expect.stringContaining('notes.txt')]);
    await reject(handle, { by: 'owner', reason: 'keep E-1' });
    const out = (await handle.result()).output;
    expect(out.results[1]).toMatchObject({
      error: 'APPROVAL_REJECTED',
      message: expect.stringContaining('keep E-1'),
    });
    expect(fs.existsSync(erased)).toBe(false);
    expect(await fingerprint(demo)).toEqual(before.files);
    expect(await tablesDigest(demo)).toBe(before.tables);
    const tape = await tapeOf(handle);
    expect(kinds(tape, 'rollback')).toEqual([
      expect.objectContaining({
        part: 'all',
        reason: expect.stringContaining('rejected by owner: keep E-1'),
      }),
    ]);
  });

  it('a run cancelled while a tool call waits: the call never runs, what was staged before it is rolled back', async () => {
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const handle = await start({
      calls: [
        { tool: 'stage_file', args: { path: 'cancelled.txt', content: 'staged, then cancelled' } },
        { tool: 'transfer', args: { customer: 'C-1001', cents: 900 } },
      ],
      commit: true,
    });
    expect((await waitForApproval(handle)).staged?.files).toEqual([expect.stringContaining('cancelled.txt')]);
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(await fingerprint(demo)).toEqual(before.files);
    expect(await tablesDigest(demo)).toBe(before.tables);
    expect(await pendingApproval(handle)).toBeNull();
    expect(kinds(await tapeOf(handle), 'tool.call').map((p) => p.toolName)).toEqual(['stage_file']);
  });

  it("onTimeout 'refuse': only the call is refused, what was staged before commits", async () => {
    const handle = await start({
      calls: [
        { tool: 'stage_file', args: { path: 'kept.txt', content: 'kept' } },
        {
          tool: 'stage_file',
          args: { path: 'asked.txt', content: 'never' },
          approval: { timeout: '1s', onTimeout: 'refuse' },
        },
      ],
      commit: true,
    });
    const out = (await handle.result()).output;
    expect(out.results[1]).toMatchObject({ error: 'APPROVAL_TIMED_OUT' });
    expect(fs.readFileSync(path.join(demo.workspace, 'kept.txt'), 'utf8')).toBe('kept');
    expect(fs.existsSync(path.join(demo.workspace, 'asked.txt'))).toBe(false);
    expect(kinds(await tapeOf(handle), 'approval').map((p) => [p.event, p.onTimeout])).toEqual([
      ['request', 'refuse'],
      ['timeout', 'refuse'],
    ]);
  });
});
