/**
 * A run waiting for a person survives what a long wait meets: its worker SIGKILLed, a decision sent while no
 * worker runs (it goes as a signal and is taken when a worker starts), the same decision sent twice, and the
 * Temporal server itself restarted (a dev server of this test's own, on its own ports and SQLite file).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingInput, AccountingOutput } from '../../../examples/accounting/agent';
import {
  ACCOUNTING_SCRIPT,
  type AccountingDemo,
  prepareAccountingDemo,
  readBalance,
} from '../../../examples/accounting/demo';
import { readOutbox } from '../../../examples/accounting/notifyServer';
import { type DevServerHandle, freePort, startDevServer } from '../../../servers/devserver';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import { approve, pendingApproval, startAgent, waitForApproval } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { spawnWorker } from '../../support/workerProcess';

const ENTRY = 'test/temporal/workflow/fixtures/boothWorker.ts';
const REQUEST = 'Refund $750 to customer C-2002: service outage credit, for a person to approve.';

describe('a run waiting for a person survives restarts', () => {
  let model: ModelServer;
  const cleanup: Array<() => Promise<unknown>> = [];
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-approval-restarts-'));
  const bundleFile = path.join(base, 'workflows.bundle.js');

  beforeAll(async () => {
    model = await startModelServer({ script: ACCOUNTING_SCRIPT });
    cleanup.push(() => model.close());
  });

  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  async function world(name: string, address: string) {
    const demo = await prepareAccountingDemo(path.join(base, name));
    const taskQueue = `approval-restarts-${name}-${Date.now().toString(36)}`;
    const env = {
      JUKEBOX_TEMPORAL_ADDRESS: address,
      JUKEBOX_TASK_QUEUE: taskQueue,
      JUKEBOX_MODEL_URL: model.url,
      JUKEBOX_DEMO_DIR: demo.dir,
      JUKEBOX_BUNDLE_FILE: bundleFile,
    };
    const worker = async () => {
      const w = await spawnWorker(env, 90_000, ENTRY);
      cleanup.push(() => w.kill());
      return w;
    };
    return { demo, taskQueue, worker };
  }

  const start = (connection: Connection, taskQueue: string) =>
    startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: REQUEST, approval: { deciders: ['reviewer'] } },
      {
        connection,
        namespace: 'jukebox',
        taskQueue,
        runOptions: { heartbeatTimeoutMs: 4_000, initialRetryIntervalMs: 100 },
      },
    );

  function committedOnce(demo: AccountingDemo, balance: number) {
    return async () => {
      expect(await readBalance(demo, 'C-2002')).toBe(balance + 75_000);
      expect(readOutbox(demo.outbox).filter((n) => n.customer === 'C-2002')).toHaveLength(1);
      expect(
        fs.readFileSync(path.join(demo.workspace, 'ledger.csv'), 'utf8').match(/C-2002,refund,75000/g),
      ).toHaveLength(1);
      expect(fs.readdirSync(demo.staging)).toEqual([]);
    };
  }

  const decisions = (demo: AccountingDemo, handle: WorkflowHandle, runId: string) =>
    readTape(path.join(demo.dir, 'tapes', tapeFileName(handle.workflowId, runId)))
      .frames.filter((f) => f.kind === 'approval')
      .map((f) => f.payload as Record<string, unknown>);

  it('worker SIGKILLed while it waits; a decision sent twice with no worker running is taken once when one starts', async () => {
    const { address, namespace } = temporalConfigFromEnv();
    const connection = await Connection.connect({ address });
    cleanup.push(() => connection.close());
    const { demo, taskQueue, worker } = await world('killed', address);
    const balance = await readBalance(demo, 'C-2002');

    const first = await worker();
    const handle = await start(connection, taskQueue);
    const pending = await waitForApproval(handle, { timeoutMs: 90_000 });
    await first.kill('SIGKILL');
    // The wait holds nothing on the worker: the request is still there, from the server alone.
    expect((await pendingApproval(handle))?.id).toBe(pending.id);

    // No worker: the update is not taken in time, so the decision goes as a signal; sent twice, one effect.
    const sent = await approve(handle, {
      by: 'reviewer',
      note: 'approved while the worker was down',
      acceptWithinMs: 2_000,
    });
    expect(sent.via).toBe('signal');
    const again = await approve(handle, {
      by: 'reviewer',
      note: 'approved while the worker was down',
      acceptWithinMs: 2_000,
    });
    expect(again.decisionId).toBe(sent.decisionId);
    expect(readOutbox(demo.outbox).filter((n) => n.customer === 'C-2002')).toEqual([]);

    await worker();
    const { output } = (await handle.result()) as { output: AccountingOutput };
    expect(output.committed).toBe(true);
    if (!output.committed) return;
    expect(output.report.approval).toMatchObject({ outcome: 'approved', by: 'reviewer', via: 'signal' });
    await committedOnce(demo, balance)();
    const frames = decisions(demo, handle, (await handle.describe()).runId);
    expect(frames.map((f) => f.event)).toEqual(['request', 'decision']);
    expect(frames[1]).toMatchObject({
      by: 'reviewer',
      via: 'signal',
      note: 'approved while the worker was down',
    });
    const history = await new Client({ connection, namespace }).workflow
      .getHandle(handle.workflowId)
      .fetchHistory();
    // Both signals are in the history (one per `approve`); the run took one decision from them.
    const signals = history.events?.filter((e) => e.workflowExecutionSignaledEventAttributes) ?? [];
    expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toEqual([
      'jukebox.approval.decision',
      'jukebox.approval.decision',
    ]);
  }, 300_000); // two worker processes start (each bundles its workflows): minutes on a loaded machine

  it('the Temporal server restarted while it waits: the request, the deadline and the run come back, the decision commits', async () => {
    const port = await freePort();
    const dbFile = path.join(base, 'temporal.sqlite');
    const serverOptions = { port, dbFile, headless: true, namespace: 'jukebox' };
    let server: DevServerHandle = await startDevServer(serverOptions);
    cleanup.push(() => server.stop());
    const address = server.address;
    const { demo, taskQueue, worker } = await world('server', address);
    const balance = await readBalance(demo, 'C-2002');
    await worker();

    let connection = await Connection.connect({ address });
    const handle = await start(connection, taskQueue);
    const pending = await waitForApproval(handle, { timeoutMs: 90_000 });
    await server.kill('SIGKILL');
    await connection.close();

    server = await startDevServer(serverOptions);
    expect(server.reused).toBe(false);
    connection = await Connection.connect({ address });
    cleanup.push(() => connection.close());
    const again = new Client({ connection, namespace: 'jukebox' }).workflow.getHandle(handle.workflowId);
    const after = await pendingApproval(again);
    expect(after).toMatchObject({ id: pending.id, deadlineMs: pending.deadlineMs, deciders: ['reviewer'] });

    // The worker reconnects by itself; the decision goes as an update once it is back.
    const decided = await approve(again, {
      by: 'reviewer',
      note: 'after the restart',
      acceptWithinMs: 60_000,
    });
    expect(decided.via).toBe('update');
    const { output } = (await again.result()) as { output: AccountingOutput };
    expect(output.committed).toBe(true);
    await committedOnce(demo, balance)();
    expect(
      decisions(demo, again, (await again.describe()).runId).map((f) => [f.event, f.via ?? null]),
    ).toEqual([
      ['request', null],
      ['decision', 'update'],
    ]);
  });
});
