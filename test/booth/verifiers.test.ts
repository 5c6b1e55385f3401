import { describe, expect, it } from 'vitest';
import { refundThresholdGate } from '../../examples/accounting/gates';
import type { EscrowedCall } from '../../src/booth/mcp';
import type { Change } from '../../src/booth/stagedWorkspace';
import {
  type BoothChangeSet,
  filesOnlyUnder,
  GateRefusedError,
  GateUnknownError,
  mcpToolsAllowed,
  noFileDeletes,
  requirePassed,
  runGates,
} from '../../src/booth/verifiers';

const change = (path: string, op: Change['op'], diff?: string): Change => ({
  path,
  op,
  before: { type: 'none' },
  after: op === 'delete' ? { type: 'none' } : { type: 'file', hash: 'h', size: 1, mode: 0o644 },
  bytesBefore: 0,
  bytesAfter: 1,
  summary: `${op} ${path}`,
  ...(diff ? { diff } : {}),
});

const call = (tool: string, args: Record<string, unknown> = {}): EscrowedCall => ({
  seq: 0,
  key: 'k:0',
  server: 'notify',
  tool,
  arguments: args,
  state: 'escrowed',
});

const refund = (cents: number, sqlCents = cents, notifications = 1): BoothChangeSet => ({
  files: [
    change(
      'ledger.csv',
      'write',
      `--- a/ledger.csv\n+++ b/ledger.csv\n+2026-12-02,C-1,refund,${cents},memo\n`,
    ),
  ],
  sql: {
    sessionId: 's-1',
    client: 'sqlite3',
    target: 'ledger.db',
    statements: [
      {
        seq: 1,
        kind: 'write',
        statement: 'UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?',
        params: [sqlCents, 'C-1'],
        rowsAffected: 1,
      },
    ],
    tables: [{ name: 'accounts', rowsBefore: 1, rowsAfter: 1 }],
    rowsAffected: 1,
  },
  mcp: Array.from({ length: notifications }, () => call('notify_customer')),
});

describe('verifiers and policy gates', () => {
  it('runs every named gate and reports each verdict, refusals included', async () => {
    const verdicts = await runGates(
      ['paths', 'no-deletes'],
      { paths: filesOnlyUnder(['docs/']), 'no-deletes': noFileDeletes() },
      { files: [change('docs/a.md', 'write'), change('src/x.ts', 'delete')], sql: null, mcp: [] },
    );
    expect(verdicts).toEqual([
      { gate: 'paths', ok: false, reason: 'changes outside docs/: src/x.ts' },
      { gate: 'no-deletes', ok: false, reason: 'would delete src/x.ts' },
    ]);
    const err = (() => {
      try {
        requirePassed(verdicts);
      } catch (e) {
        return e;
      }
    })() as GateRefusedError;
    expect(err).toBeInstanceOf(GateRefusedError);
    expect(err.code).toBe('GATE_REFUSED');
    expect(err.message).toContain('gate paths: changes outside docs/: src/x.ts; gate no-deletes');
  });

  it('a gate that throws refuses, and an unknown gate name is a typed error', async () => {
    const verdicts = await runGates(
      ['boom'],
      {
        boom: () => {
          throw new Error('no network');
        },
      },
      {
        files: [],
        sql: null,
        mcp: [],
      },
    );
    expect(verdicts).toEqual([{ gate: 'boom', ok: false, reason: 'the gate itself failed (no network)' }]);
    await expect(
      runGates(['missing'], { boom: () => ({ ok: true }) }, { files: [], sql: null, mcp: [] }),
    ).rejects.toBeInstanceOf(GateUnknownError);
    // Inherited names are not gates.
    await expect(runGates(['toString'], {}, { files: [], sql: null, mcp: [] })).rejects.toBeInstanceOf(
      GateUnknownError,
    );
  });

  it('mcpToolsAllowed names the calls it refuses', async () => {
    const gate = mcpToolsAllowed(['notify/notify_customer']);
    expect(
      await gate({ files: [], sql: null, mcp: [call('notify_customer'), call('delete_customer')] }),
    ).toEqual({
      ok: false,
      reason: 'MCP calls not allowed: notify/delete_customer',
    });
  });

  it('the refund gate passes $500.00 and refuses a cent more, or parts that disagree', async () => {
    const gate = refundThresholdGate();
    expect(await gate(refund(50_000))).toMatchObject({ ok: true });
    expect(await gate(refund(50_001))).toEqual({
      ok: false,
      reason: 'refund of $500.01 to C-1 exceeds the $500.00 autonomous threshold; a person must approve it',
    });
    // A small ledger line cannot hide a big balance update, nor a missing or extra notification.
    expect(await gate(refund(100, 90_000))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('differ'),
    });
    expect(await gate(refund(100, 100, 0))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('disagree'),
    });
    expect(await gate(refund(100, 100, 2))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('disagree'),
    });
  });
});
