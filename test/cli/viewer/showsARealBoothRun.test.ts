import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingOutput } from '../../../examples/accounting/agent';
import { ACCOUNTING_SCRIPT, accountingBooth, prepareAccountingDemo } from '../../../examples/accounting/demo';
import { accountingTools } from '../../../examples/accounting/tools';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { type StepDetail, TapeLibrary } from '../../../src/cli/viewer';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { connectTestWorker } from '../../support/temporal';

describe('the viewer on real Shadow Booth runs (the accounting quickstart, committed and rolled back)', () => {
  let model: ModelServer;
  let booth: BoothRuntime;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  let tapes: string;
  let library: TapeLibrary;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-view-booth-'));
    const demo = await prepareAccountingDemo(path.join(base, 'demo'));
    tapes = path.join(base, 'tapes');
    model = await startModelServer({ script: ACCOUNTING_SCRIPT });
    booth = new BoothRuntime(accountingBooth(demo));
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: accountingTools,
      booth,
      tape: { dir: tapes },
    });
    for (const [name, request] of [
      ['commit', 'Refund $120 to customer C-1001: duplicate charge.'],
      ['rollback', 'Refund $750 to customer C-2002: service outage credit.'],
    ] as const) {
      const handle = await startAgent<{ request: string }, AccountingOutput>(
        'accountingAgent',
        { request },
        { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
      );
      await handle.result();
      ids[name] = path.basename(tapeFileName(handle.workflowId, (await handle.describe()).runId), '.jbx');
    }
    library = new TapeLibrary(tapes, () => null);
  }, 120_000);
  afterAll(async () => {
    await env?.close();
    await booth?.close();
    await model?.close();
  });

  const effectsOf = (
    id: string,
    kind: string,
  ): { detail: StepDetail; effect: StepDetail['effects'][number] }[] => {
    const run = library.run(id);
    return run.rows
      .filter((r) => r.marks.includes(kind))
      .flatMap((r) => {
        const detail = library.step(id, r.i);
        return detail.effects.filter((e) => e.kind === kind).map((effect) => ({ detail, effect }));
      });
  };

  const LEDGER_BEFORE = [
    'date,customer,type,amount_cents,memo',
    '2026-11-03,C-1001,invoice,-48000,annual plan',
    '2026-11-04,C-1001,payment,48000,card ending 4242',
    '2026-11-20,C-2002,invoice,-120000,enterprise seats',
  ];
  const AGENT_ROWS = ['llm', 'tool', 'llm', 'tool', 'llm', 'tool', 'llm'];

  it('a committed refund: the staged ledger line as a diff, the SQL, the escrowed MCP call, each commit part', () => {
    const run = library.run(ids.commit!);
    expect(run.verification).toMatchObject({ status: 'intact', sealed: true });
    expect(run.outcome?.status).toBe('completed');
    // Seven agent steps, then the commit's five booth activities (verify, files, sql, mcp, finish).
    expect(run.rows.map((r) => r.kind)).toEqual([...AGENT_ROWS, 'booth', 'booth', 'booth', 'booth', 'booth']);
    // Every llm and tool row can be forked from; booth activities cannot.
    for (const r of run.rows) expect(r.fork !== null).toBe(r.kind === 'llm' || r.kind === 'tool');

    const writes = effectsOf(ids.commit!, 'fs.mutation');
    expect(writes.map((w) => w.effect.summary)).toEqual(['append ledger.csv']);
    // The tape holds the staged content, not the file as it was before staging: the first write is all new.
    expect(writes[0]!.effect.diff).toEqual({
      path: 'ledger.csv',
      against: 'nothing on the tape before',
      lines: [...LEDGER_BEFORE, '2026-12-02,C-1001,refund,12000,duplicate charge'].map((text) => ({
        op: '+',
        text,
      })),
    });
    expect(effectsOf(ids.commit!, 'sql.mutation').map((e) => e.effect.summary)).toEqual([
      'SELECT id, name, email, balance_cents FROM accounts WHERE id = ? ["C-1001"] (read, 0 rows)',
      'UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ? [12000,"C-1001"] (write, 1 rows)',
      'SELECT email FROM accounts WHERE id = ? ["C-1001"] (read, 0 rows)',
    ]);
    expect(effectsOf(ids.commit!, 'mcp.call').map((e) => e.effect.summary)).toEqual([
      'notify tools/call notify_customer [escrowed]',
      'notify tools/call notify_customer [commit]',
    ]);
    expect(effectsOf(ids.commit!, 'commit').map((e) => e.effect.summary)).toEqual([
      'commit verify',
      'commit files',
      'commit sql',
      'commit mcp',
      'commit all',
    ]);
    expect(effectsOf(ids.commit!, 'rollback')).toEqual([]);
  });

  it('a refused refund: the rollback with the gate reason, no commit past verify', () => {
    const run = library.run(ids.rollback!);
    expect(run.verification).toMatchObject({ status: 'intact', sealed: true });
    expect(run.outcome?.status).toBe('completed');
    // The gates' verdict (verify), then the rollback.
    expect(run.rows.map((r) => r.kind)).toEqual([...AGENT_ROWS, 'booth', 'booth']);
    expect(run.rows.map((r) => r.marks.filter((m) => m === 'commit' || m === 'rollback'))).toEqual([
      ...AGENT_ROWS.map(() => []),
      ['commit'],
      ['rollback'],
    ]);
    expect(effectsOf(ids.rollback!, 'commit').map((e) => e.effect.summary)).toEqual(['commit verify']);
    expect(effectsOf(ids.rollback!, 'rollback').map((e) => e.effect.summary)).toEqual([
      'rollback all: commit refused by gate refund-threshold: refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it; nothing was applied and the staged changes were rolled back',
    ]);
    expect(effectsOf(ids.rollback!, 'mcp.call').map((e) => e.effect.summary)).toEqual([
      'notify tools/call notify_customer [escrowed]',
    ]);
  });

  it('the two runs compare step by step through src/timetravel/diff/: they part at the gate, committed against rolled back', () => {
    const d = library.diff(ids.commit!, ids.rollback!);
    expect([d.a.outcome, d.b.outcome]).toEqual(['completed', 'completed']);
    expect([
      (d.a.result as { committed: boolean }).committed,
      (d.b.result as { committed: boolean }).committed,
    ]).toEqual([true, false]);
    // Seven agent steps and the commit on each side, paired one to one; the requests differ from the first step.
    expect([d.a.steps, d.b.steps]).toEqual([8, 8]);
    expect(d.counts).toEqual({ same: 0, changed: 8, removed: 0, inserted: 0 });
    expect(d.rows.map((r) => [r.a?.kind, r.b?.kind])).toEqual([...AGENT_ROWS, 'commit'].map((k) => [k, k]));
    expect(d.firstDivergence).toBe(0);
    const gate = d.rows[7]!;
    expect(gate.a).toMatchObject({ step: 7, kind: 'commit', name: 'refund-threshold' });
    expect(gate.b).toMatchObject({ step: 7, kind: 'commit', name: 'refund-threshold' });
    expect(gate.differences).toEqual([
      {
        field: 'output',
        a: 'committed: refund-threshold ok',
        b: 'rolled back at verify: commit refused by gate refund-threshold: refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it; nothing was applied and the staged changes were rolled back',
      },
      {
        field: 'effects',
        a: ['commit verify', 'commit files', 'commit sql', 'commit mcp', 'commit all'],
        b: ['commit verify', 'rollback all'],
      },
    ]);
  });
});
