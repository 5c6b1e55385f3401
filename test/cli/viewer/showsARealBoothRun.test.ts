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

  it('a committed refund: the staged ledger line as a diff, the SQL, the escrowed MCP call, each commit part', () => {
    const run = library.run(ids.commit!);
    expect(run.verification).toMatchObject({ status: 'intact', sealed: true });
    expect(run.outcome?.status).toBe('completed');
    expect(run.rows.filter((r) => r.kind === 'llm').length).toBeGreaterThan(0);
    expect(run.rows.some((r) => r.kind === 'booth')).toBe(true);
    // Every llm and tool row can be forked from; booth activities cannot.
    for (const r of run.rows) expect(r.fork !== null).toBe(r.kind === 'llm' || r.kind === 'tool');

    const [write] = effectsOf(ids.commit!, 'fs.mutation');
    expect(write!.effect.summary).toBe('append ledger.csv');
    // The tape holds the staged content, not the file as it was before staging: the first write is all new.
    expect(write!.effect.diff?.against).toBe('nothing on the tape before');
    expect(write!.effect.diff?.lines.every((l) => l.op === '+')).toBe(true);
    expect(write!.effect.diff?.lines.map((l) => l.text)).toContainEqual(
      expect.stringContaining('C-1001,refund,12000'),
    );
    const sql = effectsOf(ids.commit!, 'sql.mutation').map((e) => e.effect.summary);
    expect(sql.some((s) => /^update /i.test(s) && /1 rows\)$/.test(s))).toBe(true);
    const mcp = effectsOf(ids.commit!, 'mcp.call').map((e) => e.effect.summary);
    expect(mcp).toEqual([
      'notify tools/call notify_customer [escrowed]',
      'notify tools/call notify_customer [commit]',
    ]);
    expect(effectsOf(ids.commit!, 'commit').map((e) => e.effect.summary)).toEqual([
      'commit files',
      'commit sql',
      'commit mcp',
      'commit all',
    ]);
    expect(effectsOf(ids.commit!, 'rollback')).toEqual([]);
  });

  it('a refused refund: the rollback with the gate reason, no commit', () => {
    const run = library.run(ids.rollback!);
    expect(run.verification.status).toBe('intact');
    expect(effectsOf(ids.rollback!, 'commit')).toEqual([]);
    const [rollback] = effectsOf(ids.rollback!, 'rollback');
    expect(rollback!.effect.summary).toMatch(/^rollback all: .*exceeds the \$500\.00 autonomous threshold/);
    expect(run.rows.find((r) => r.marks.includes('rollback'))!.kind).toBe('booth');
  });

  it('the two runs compare step by step through src/timetravel/diff/', () => {
    const d = library.diff(ids.commit!, ids.rollback!);
    expect(d.rows.length).toBeGreaterThan(0);
    expect(d.firstDivergence).not.toBeNull();
    expect(d.a.outcome).toBe('completed');
  });
});
