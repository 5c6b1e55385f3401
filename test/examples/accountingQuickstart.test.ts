import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingInput, AccountingOutput } from '../../examples/accounting/agent';
import {
  ACCOUNTING_SCRIPT,
  type AccountingDemo,
  accountingBooth,
  fingerprint,
  prepareAccountingDemo,
  readBalance,
  tablesDigest,
} from '../../examples/accounting/demo';
import { readOutbox } from '../../examples/accounting/notifyServer';
import { accountingTools } from '../../examples/accounting/tools';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import type { SqlWriteSet } from '../../src/booth/sql';
import type { BoothChangeSet } from '../../src/booth/verifiers';
import { localEndpoints } from '../../src/llm';
import { tapeFileName } from '../../src/recorder';
import { type BlobRef, decodeBlob, readTape, type Tape } from '../../src/recorder/tape';
import { startAgent, waitForApproval } from '../../src/temporal';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker } from '../support/temporal';
import { runJbx } from '../timetravel/replay/jbx';

describe('the accounting quickstart', () => {
  let model: ModelServer;
  let demo: AccountingDemo;
  let booth: BoothRuntime;
  let tapes: string;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-accounting-'));
    demo = await prepareAccountingDemo(path.join(base, 'demo'));
    tapes = path.join(base, 'tapes');
    model = await startModelServer({ script: ACCOUNTING_SCRIPT });
    booth = new BoothRuntime(accountingBooth(demo));
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: accountingTools,
      booth,
      tape: { dir: tapes },
    });
  });

  afterAll(async () => {
    await env?.close();
    await booth?.close();
    await model?.close();
  });

  async function refund(request: string) {
    const handle = await startAgent<{ request: string }, AccountingOutput>(
      'accountingAgent',
      { request },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
    );
    const result = await handle.result();
    const runId = (await handle.describe()).runId;
    const tape = readTape(path.join(tapes, tapeFileName(handle.workflowId, runId)));
    return { output: result.output, tape };
  }

  const payloads = (tape: Tape, kind: string) =>
    tape.frames.filter((f) => f.kind === kind).map((f) => f.payload as Record<string, unknown>);

  it('commits a $120 refund: ledger line, balance and notification all land, staging is gone', async () => {
    const before = await fingerprint(demo);
    const { output, tape } = await refund('Refund $120 to customer C-1001: duplicate charge.');
    expect(output.committed).toBe(true);
    if (!output.committed) return;
    expect(output.report.verdicts).toEqual([
      { gate: 'refund-threshold', ok: true, reason: expect.stringContaining('$120.00') },
    ]);
    expect(output.report.staged.files).toHaveLength(1);
    expect(output.report.staged.mcp[0]).toContain('notify/notify_customer');
    expect(output.report.sql).toMatchObject({ statements: 1, rowsAffected: 1 });
    expect(output.report.mcp).toEqual({ applied: 1, skipped: 0 });

    expect(await readBalance(demo, 'C-1001')).toBe(12_000);
    expect(fs.readFileSync(path.join(demo.workspace, 'ledger.csv'), 'utf8')).toContain(
      'C-1001,refund,12000,duplicate charge',
    );
    expect(readOutbox(demo.outbox)).toEqual([
      expect.objectContaining({ customer: 'C-1001', message: expect.stringContaining('$120.00') }),
    ]);
    const after = await fingerprint(demo);
    expect(after.workspace).not.toBe(before.workspace);
    expect(after.database).not.toBe(before.database);
    expect(after.outbox).not.toBe(before.outbox);
    expect(fs.readdirSync(demo.staging)).toEqual([]);

    // The tape: the staged write with its content, the staged SQL and MCP call, then each commit part.
    const write = payloads(tape, 'fs.mutation')[0]!;
    expect(write).toMatchObject({ op: 'append', path: 'ledger.csv' });
    const content = decodeBlob(tape.blobs.get((write.after as BlobRef).hash)!) as Uint8Array;
    expect(Buffer.from(content).toString('utf8')).toContain('C-1001,refund,12000');
    expect(payloads(tape, 'sql.mutation').map((p) => p.kind)).toEqual(['read', 'write', 'read']);
    expect(payloads(tape, 'mcp.call').map((p) => p.phase ?? 'escrow')).toEqual(['escrow', 'commit']);
    expect(payloads(tape, 'commit').map((p) => p.part)).toEqual(['verify', 'files', 'sql', 'mcp', 'all']);
    expect(payloads(tape, 'rollback')).toEqual([]);
    // The verify frame holds the change set exactly as the gate judged it: the ledger diff, the statement, the call.
    const judged = decodeBlob(
      tape.blobs.get((payloads(tape, 'commit')[0]!.changes as BlobRef).hash)!,
    ) as BoothChangeSet;
    expect(judged.files.map((f) => [f.path, f.op])).toEqual([['ledger.csv', 'write']]);
    expect(judged.files[0]!.diff).toContain('+2026-12-02,C-1001,refund,12000,duplicate charge');
    expect((judged.sql as SqlWriteSet).statements.map((s) => [s.statement, s.params])).toEqual([
      ['UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?', [12000, 'C-1001']],
    ]);
    expect(judged.mcp.map((c) => `${c.server}/${c.tool}`)).toEqual(['notify/notify_customer']);
  });

  it('refuses a $750 refund at the gate: rolled back, workspace, database and outbox hash the same', async () => {
    const before = await fingerprint(demo);
    const balance = await readBalance(demo, 'C-2002');
    const { output, tape } = await refund('Refund $750 to customer C-2002: service outage credit.');
    expect(output.committed).toBe(false);
    if (output.committed) return;
    expect(output.reason).toContain('refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold');
    expect(output.verdicts).toEqual([{ gate: 'refund-threshold', ok: false, reason: expect.any(String) }]);

    expect(await fingerprint(demo)).toEqual(before);
    expect(await readBalance(demo, 'C-2002')).toBe(balance);
    expect(fs.readdirSync(demo.staging)).toEqual([]);

    // Nothing applied: the only commit frame is the verify step's judgement, with the refusing verdict.
    expect(payloads(tape, 'commit').map((p) => [p.part, p.verdicts])).toEqual([
      [
        'verify',
        [
          {
            gate: 'refund-threshold',
            ok: false,
            reason:
              'refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it',
          },
        ],
      ],
    ]);
    const rollback = payloads(tape, 'rollback');
    expect(rollback).toHaveLength(1);
    expect(rollback[0]).toMatchObject({ part: 'all', reason: expect.stringContaining('$500.00') });
    expect(JSON.stringify(rollback[0]!.discarded)).toContain('notify/notify_customer');
  });

  const APPROVAL_REQUEST = 'Refund $750 to customer C-2002: service outage credit, for a person to approve.';

  async function askingRefund() {
    const handle = await startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: APPROVAL_REQUEST, approval: { deciders: ['reviewer'] } },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
    );
    const pending = await waitForApproval(handle);
    return { handle, pending };
  }

  it('asks a person for the $750 refund instead: `jbx approve` as the reviewer commits it', async () => {
    const before = await fingerprint(demo);
    const balance = await readBalance(demo, 'C-2002');
    const { handle, pending } = await askingRefund();
    expect(pending.reason).toContain('a person must approve it');
    // Listed across workflows (visibility may lag the run's memo by a moment).
    await expect
      .poll(
        async () =>
          JSON.parse((await runJbx(['approvals', '--json'])).stdout).pending.map(
            (p: { workflowId: string }) => p.workflowId,
          ),
        {
          timeout: 15_000,
        },
      )
      .toContain(handle.workflowId);
    const listing = await runJbx(['approvals']);
    expect(listing.stdout).toContain(
      `approval ${pending.id} at step ${pending.step}: commit, asked by gate refund-approval`,
    );
    expect(listing.stdout).toContain(
      '  sql   UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ? [75000,"C-2002"]',
    );
    expect(listing.stdout).toMatch(
      /\n {2}file {2}write ledger\.csv: \d+ -> \d+ bytes, mode 644, \+1 -0 lines\n/,
    );
    expect(listing.stdout).toMatch(/\n {2}mcp {3}notify\/notify_customer \{"customer":"C-2002",/);
    expect(listing.stdout).toContain(`  reason: ${pending.reason}`);

    const mallory = await runJbx(['approve', handle.workflowId, '--by', 'mallory']);
    expect(mallory.code).toBe(1);
    expect(mallory.stderr).toContain('mallory may not decide approval');
    const approved = await runJbx([
      'approve',
      handle.workflowId,
      '--by',
      'reviewer',
      '--note',
      'outage confirmed with support',
      '--json',
    ]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ verdict: 'approve', by: 'reviewer', via: 'update' });

    const { output } = await handle.result();
    expect(output.committed).toBe(true);
    expect(await readBalance(demo, 'C-2002')).toBe(balance + 75_000);
    expect((await fingerprint(demo)).outbox).not.toBe(before.outbox);
    const tape = readTape(path.join(tapes, tapeFileName(handle.workflowId, (await handle.describe()).runId)));
    expect(payloads(tape, 'approval').map((p) => [p.event, p.by ?? null])).toEqual([
      ['request', null],
      ['decision', 'reviewer'],
    ]);
    expect(payloads(tape, 'commit').map((p) => p.part)).toEqual(['verify', 'files', 'sql', 'mcp', 'all']);
    // Who, when and the note: in jbx show, and as an event on the run's span in the OTLP export.
    const file = path.join(tapes, tapeFileName(handle.workflowId, (await handle.describe()).runId));
    const decision = payloads(tape, 'approval')[1]!;
    const when = new Date(decision.atMs as number).toISOString();
    const shown = await runJbx(['show', file]);
    expect(shown.stdout).toContain(
      `approved ${pending.id} by reviewer at ${when} via update: outage confirmed with support`,
    );
    expect(shown.stdout).toContain(`asked ${pending.id} (commit): gate refund-approval:`);
    const otlp = JSON.parse((await runJbx(['export', file, '--format', 'otlp-json'])).stdout);
    const root = otlp.resourceSpans[0].scopeSpans[0].spans[0];
    const attrs = (e: {
      attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
    }) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value.stringValue ?? a.value.intValue]));
    expect(root.name).toBe('invoke_agent accountingAgent');
    expect(root.events.map((e: { name: string }) => e.name)).toEqual([
      'jukebox.approval',
      'jukebox.approval',
    ]);
    expect(attrs(root.events[1])).toMatchObject({
      'jukebox.approval.event': 'decision',
      'jukebox.approval.outcome': 'approved',
      'jukebox.approval.by': 'reviewer',
      'jukebox.approval.note': 'outage confirmed with support',
      'jukebox.approval.via': 'update',
      'jukebox.approval.at_ms': String(decision.atMs),
    });

    // The run is over: deciding on it again is an error with exit code 1, and nothing happens twice.
    const again = await runJbx(['approve', handle.workflowId, '--by', 'reviewer']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already ended \(COMPLETED.*approval .* was approved by reviewer/);
    expect(await readBalance(demo, 'C-2002')).toBe(balance + 75_000);
  });

  it('a rejection through `jbx reject` rolls it back: ledger, table and outbox byte-for-byte unchanged', async () => {
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const { handle } = await askingRefund();
    const noReason = await runJbx(['reject', handle.workflowId, '--by', 'reviewer']);
    expect(noReason.code).toBe(2);
    const rejected = await runJbx([
      'reject',
      handle.workflowId,
      '--by',
      'reviewer',
      '--reason',
      'no outage on record',
    ]);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toContain(`rejected approval`);
    const { output } = await handle.result();
    expect(output.committed).toBe(false);
    if (output.committed) return;
    expect(output.reason).toBe('rejected by reviewer: no outage on record');
    expect(await fingerprint(demo)).toEqual(before.files);
    expect(await tablesDigest(demo)).toBe(before.tables);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    const late = await runJbx(['reject', handle.workflowId, '--by', 'reviewer', '--reason', 'again']);
    expect(late.code).toBe(1);
  });
});
