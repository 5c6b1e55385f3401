/**
 * SIGKILL the worker at every crash point of the Shadow Booth commit (and of its compensation), let Temporal
 * retry on a fresh worker, and check the real workspace, database and MCP outbox are exactly all-new (or, for
 * a commit that must roll back, exactly all-old) with no staging leftovers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingOutput } from '../../../examples/accounting/agent';
import {
  ACCOUNTING_SCRIPT,
  fingerprint,
  prepareAccountingDemo,
  readBalance,
  tablesDigest,
} from '../../../examples/accounting/demo';
import { readOutbox } from '../../../examples/accounting/notifyServer';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';

const ENTRY = 'test/temporal/workflow/fixtures/boothWorker.ts';
const REQUEST = 'Refund $120 to customer C-1001: duplicate charge.';

const COMMIT_POINTS = [
  'files:undo-saved',
  'files:commit:journal-written',
  'files:commit:file-applied:0',
  'files:commit:applied',
  'files:commit:manifest-removed',
  'sql:before-commit',
  'sql:committed',
  'mcp:before-call:0',
  'mcp:call-applied:0',
  'finish:before',
];

// With the customer unreachable the MCP part fails after files and SQL applied, so the saga compensates.
const COMPENSATION_POINTS = [
  'files:undo-staged',
  'files:undo:commit:journal-written',
  'files:undo:commit:applied',
];

describe('the commit survives a SIGKILLed worker at each crash point', () => {
  let model: ModelServer;
  let connection: Connection;
  const workers: WorkerProcess[] = [];
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-faults-'));

  beforeAll(async () => {
    model = await startModelServer({ script: ACCOUNTING_SCRIPT });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });

  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
  });

  async function crashRun(point: string, refuse?: string) {
    const demo = await prepareAccountingDemo(path.join(base, point.replace(/[^a-z0-9]+/gi, '-')));
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const taskQueue = `faults-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    const env: Record<string, string> = {
      JUKEBOX_TASK_QUEUE: taskQueue,
      JUKEBOX_MODEL_URL: model.url,
      JUKEBOX_DEMO_DIR: demo.dir,
      JUKEBOX_BUNDLE_FILE: path.join(base, 'workflows.bundle.js'),
      ...(refuse ? { JUKEBOX_REFUSE_CUSTOMERS: refuse } : {}),
    };
    const doomed = await spawnWorker({ ...env, JUKEBOX_BOOTH_CRASH_AT: point }, 60_000, ENTRY);
    workers.push(doomed);
    const handle = await startAgent<{ request: string }, AccountingOutput>(
      'accountingAgent',
      { request: REQUEST },
      {
        connection,
        namespace: temporalConfigFromEnv().namespace,
        taskQueue,
        runOptions: { heartbeatTimeoutMs: 4_000, initialRetryIntervalMs: 100, maximumAttempts: 3 },
      },
    );
    const killed = await new Promise<NodeJS.Signals | null>((resolve) =>
      doomed.child.once('exit', (_code, signal) => resolve(signal)),
    );
    expect(killed, `the worker was meant to die at ${point}:\n${doomed.output()}`).toBe('SIGKILL');
    const survivor = await spawnWorker(env, 60_000, ENTRY);
    workers.push(survivor);
    const result = await handle.result().catch((err: unknown) => err);
    if (process.env.DEBUG_FAULTS) console.log(point, doomed.output(), survivor.output());
    await survivor.kill('SIGKILL');
    return { demo, before, result };
  }

  it.each(COMMIT_POINTS)(
    'killed at %s: the refund is committed exactly once, nothing staged remains',
    async (point) => {
      const { demo, before, result } = await crashRun(point);
      expect((result as { output: AccountingOutput }).output?.committed, String(result)).toBe(true);
      expect(await readBalance(demo, 'C-1001')).toBe(12_000);
      const ledger = fs.readFileSync(path.join(demo.workspace, 'ledger.csv'), 'utf8');
      expect(ledger.match(/C-1001,refund,12000/g)).toHaveLength(1);
      expect(readOutbox(demo.outbox)).toHaveLength(1);
      expect((await fingerprint(demo)).workspace).not.toBe(before.files.workspace);
      expect(fs.readdirSync(demo.staging)).toEqual([]);
      // No temp files of an interrupted atomic write next to the ledger either.
      expect(fs.readdirSync(demo.workspace)).toEqual(['ledger.csv']);
    },
  );

  it.each(COMPENSATION_POINTS)(
    'killed at %s while compensating: everything is back exactly as it was, nothing staged remains',
    async (point) => {
      const { demo, before, result } = await crashRun(point, 'C-1001');
      expect(result).toBeInstanceOf(WorkflowFailedError);
      expect(String((result as WorkflowFailedError).cause?.message)).toContain('C-1001 cannot be reached');
      const after = await fingerprint(demo);
      expect(after.workspace).toBe(before.files.workspace);
      expect(after.outbox).toBe(before.files.outbox);
      expect(await tablesDigest(demo)).toBe(before.tables);
      expect(fs.readdirSync(demo.staging)).toEqual([]);
      expect(fs.readdirSync(demo.workspace)).toEqual(['ledger.csv']);
    },
  );
});
