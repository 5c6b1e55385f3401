/**
 * Fifty recorded runs in the accounting quickstart's shape: the accounting agent, its tools and its $500
 * refund-threshold gate over the demo's ledger, accounts database and notify server, on the real dev server.
 * Run i refunds $(50 + 20 i) to its own customer R-i: runs 0..22 ($50..$490) commit, runs 23..49
 * ($510..$1030) are refused by the gate. After recording, the customers' balances are put back to what the runs
 * started from, so a what-if run reads the accounts its recording read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import type { AccountingInput, AccountingOutput } from '../../../examples/accounting/agent';
import {
  type AccountingDemo,
  accountingBooth,
  prepareAccountingDemo,
} from '../../../examples/accounting/demo';
import { createNotifyServer } from '../../../examples/accounting/notifyServer';
import { accountingTools, NOTIFY_SERVER } from '../../../examples/accounting/tools';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { startAgent } from '../../../src/temporal';
import {
  type ModelScript,
  type ModelServer,
  type ScriptTurn,
  startModelServer,
} from '../../../src/testing/modelserver';
import { connectTestWorker } from '../../support/temporal';

export const RUNS = 50;
export const customer = (i: number) => `R-${i}`;
export const dollars = (i: number) => 50 + 20 * i;
export const requestFor = (i: number) => `Refund $${dollars(i)} to customer ${customer(i)}: case ${i}.`;
const START_BALANCE = (i: number) => 10_000 + i;

/**
 * Three model turns per run: read the account, stage the refund, answer. `model` and `stagedCents`: the turns
 * of another model, which stages other amounts.
 */
export function refundScript(
  options: { model?: string; stagedCents?: (i: number) => number } = {},
): ModelScript {
  const turns: ScriptTurn[] = [];
  for (let i = 0; i < RUNS; i++) {
    const who = `customer ${customer(i)}:`;
    const m = options.model ? { model: options.model } : {};
    const cents = options.stagedCents?.(i) ?? dollars(i) * 100;
    turns.push(
      {
        id: `answer-${i}`,
        repeat: true,
        match: { ...m, lastUser: who, toolResult: 'STAGED' },
        reply: { text: `Staged the refund to ${customer(i)}, pending commit.` },
      },
      {
        id: `stage-${i}`,
        repeat: true,
        match: { ...m, lastUser: who, toolResult: 'ACCOUNT' },
        reply: {
          toolCalls: [
            {
              name: 'stage_refund',
              arguments: { customer: customer(i), amount_cents: cents, memo: `case ${i}` },
            },
          ],
        },
      },
      {
        id: `account-${i}`,
        repeat: true,
        match: { ...m, lastUser: who },
        reply: {
          text: 'Let me check the account first.',
          toolCalls: [{ name: 'get_account', arguments: { customer: customer(i) } }],
        },
      },
    );
  }
  return { name: `experiment-refunds${options.model ? `-${options.model}` : ''}`, turns };
}

async function withDb<T>(demo: AccountingDemo, fn: (db: knexFactory.Knex) => Promise<T>): Promise<T> {
  const db = knexFactory({
    client: 'sqlite3',
    connection: { filename: demo.database },
    useNullAsDefault: true,
  });
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

export interface RecordedRefunds {
  base: string;
  demo: AccountingDemo;
  tapeDir: string;
  /** The 50 recordings, by run index. */
  tapes: string[];
  model: ModelServer;
  env: Awaited<ReturnType<typeof connectTestWorker>>;
  close(): Promise<void>;
}

export async function recordRefundRuns(): Promise<RecordedRefunds> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-experiment-'));
  const demo = await prepareAccountingDemo(path.join(base, 'demo'));
  await withDb(demo, async (db) => {
    for (let i = 0; i < RUNS; i++)
      await db.raw('INSERT INTO accounts (id, name, email, balance_cents) VALUES (?, ?, ?, ?)', [
        customer(i),
        `Customer ${i}`,
        `r${i}@example.com`,
        START_BALANCE(i),
      ]);
  });
  const tapeDir = path.join(base, 'tapes');
  const model = await startModelServer({ script: refundScript() });
  const booth = new BoothRuntime({
    ...accountingBooth(demo),
    mcpServers: [
      {
        name: NOTIFY_SERVER,
        transport: { kind: 'in-process', createServer: () => createNotifyServer({ outbox: demo.outbox }) },
      },
    ],
  });
  const env = await connectTestWorker({
    endpoints: localEndpoints(model.url),
    tools: accountingTools,
    booth,
    tape: { dir: tapeDir },
  });
  // One after another: the committing runs append to the same ledger, and a commit over a ledger that changed
  // since it was staged is refused (CommitConflictError).
  const tapes: string[] = [];
  for (let i = 0; i < RUNS; i++)
    tapes.push(
      await (async () => {
        const handle = await startAgent<AccountingInput, AccountingOutput>(
          'accountingAgent',
          { request: requestFor(i) },
          {
            connection: env.connection,
            namespace: env.namespace,
            taskQueue: env.taskQueue,
            workflowId: `refund-${i}-${path.basename(base)}`,
          },
        );
        await handle.result();
        return path.join(tapeDir, tapeFileName(handle.workflowId, (await handle.describe()).runId));
      })(),
    );
  // The committed refunds raised their customers' balances: back to what every run read.
  await withDb(demo, async (db) => {
    for (let i = 0; i < RUNS; i++)
      await db.raw('UPDATE accounts SET balance_cents = ? WHERE id = ?', [START_BALANCE(i), customer(i)]);
  });
  return {
    base,
    demo,
    tapeDir,
    tapes,
    model,
    env,
    async close() {
      await env.close();
      await booth.close();
      await model.close();
    },
  };
}
