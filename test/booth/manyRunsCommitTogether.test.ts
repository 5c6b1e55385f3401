import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingDemo } from '../../examples/accounting/demo';
import { readOutbox } from '../../examples/accounting/notifyServer';
import type { CommitReport } from '../../src/agent/commit';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import { localEndpoints } from '../../src/llm';
import { tapeFileName } from '../../src/recorder';
import { readTape, verifyTape } from '../../src/recorder/tape';
import { startAgent } from '../../src/temporal';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker } from '../support/temporal';
import {
  amount,
  customer,
  prepareRefundWorld,
  refundBooth,
  refundScript,
  refundTools,
  requestFor,
} from './fixtures/refundRuns';

const ROOT = path.join(__dirname, '../..');
const WORKFLOWS = path.join(__dirname, 'fixtures/refundWorkflows.ts');
const RUNS = 40;

describe('many runs of one worker staging and committing at once', () => {
  let model: ModelServer;
  let demo: AccountingDemo;
  let booth: BoothRuntime;
  let tapes: string;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    // The breaker's default semantic detector needs the embedding model: the project's own installer fetches it.
    execFileSync('bash', [path.join(ROOT, 'scripts/embedding-model.sh')], { stdio: 'ignore' });
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-many-commits-'));
    demo = await prepareRefundWorld(path.join(base, 'demo'), RUNS);
    tapes = path.join(base, 'tapes');
    model = await startModelServer({ script: refundScript(RUNS) });
    booth = new BoothRuntime(refundBooth(demo));
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: refundTools,
      workflowsPath: WORKFLOWS,
      booth,
      tape: { dir: tapes },
    });
  }, 600_000);

  afterAll(async () => {
    await env?.close();
    await booth?.close();
    await model?.close();
  });

  it('commits every refund exactly once: balances, refund rows, ledger files, notifications; no step fails', async () => {
    const handles = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        startAgent<{ request: string }, { answer: string; report: CommitReport }>(
          'refundAgent',
          { request: requestFor(i) },
          { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
        ),
      ),
    );
    const results = await Promise.all(handles.map((h) => h.result()));
    for (const [i, r] of results.entries()) {
      expect(r.output.answer).toBe(`Staged the refund to ${customer(i)}, pending commit.`);
      expect(r.output.report).toMatchObject({
        verdicts: [{ gate: 'refund-parts', ok: true }],
        sql: { statements: 2, rowsAffected: 2, recovered: false },
        mcp: { applied: 1, skipped: 0 },
      });
    }
    // Three model calls a run, none repeated: no step was retried.
    expect(model.requestCount()).toBe(3 * RUNS);

    const db = knexFactory({
      client: 'sqlite3',
      connection: { filename: demo.database },
      useNullAsDefault: true,
    });
    try {
      const balances = (await db('accounts').where('id', 'like', 'L-%').select('id', 'balance_cents')) as {
        id: string;
        balance_cents: number;
      }[];
      expect(new Map(balances.map((b) => [b.id, b.balance_cents]))).toEqual(
        new Map(Array.from({ length: RUNS }, (_, i) => [customer(i), amount(i)])),
      );
      const refunds = await db('refunds').orderBy('id').select();
      expect(refunds).toEqual(
        Array.from({ length: RUNS }, (_, i) => ({
          id: `refund-${customer(i)}`,
          customer: customer(i),
          amount_cents: amount(i),
        })).sort((a, b) => (a.id < b.id ? -1 : 1)),
      );
    } finally {
      await db.destroy();
    }
    const ledger = path.join(demo.workspace, 'ledger');
    expect(fs.readdirSync(ledger).sort()).toEqual(
      Array.from({ length: RUNS }, (_, i) => `${customer(i)}.csv`).sort(),
    );
    for (let i = 0; i < RUNS; i++)
      expect(fs.readFileSync(path.join(ledger, `${customer(i)}.csv`), 'utf8')).toBe(
        `2026-12-02,${customer(i)},refund,${amount(i)}\n`,
      );
    expect(
      readOutbox(demo.outbox)
        .map((n) => n.id)
        .sort(),
    ).toEqual(Array.from({ length: RUNS }, (_, i) => `refund-${customer(i)}`).sort());
    expect(fs.readdirSync(demo.staging)).toEqual([]);

    // No step of any run failed: no busy database, no lock timeout reached a run, not even as a retried attempt.
    for (const h of handles) {
      const { runId } = await h.describe();
      const file = path.join(tapes, tapeFileName(h.workflowId, runId));
      expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
      const tape = readTape(file);
      expect(tape.frames.filter((f) => f.kind === 'activity.error').map((f) => f.payload)).toEqual([]);
      expect(
        tape.frames.filter((f) => f.kind === 'commit').map((f) => (f.payload as { part: string }).part),
      ).toEqual(['verify', 'files', 'sql', 'mcp', 'all']);
    }
  });
});
