import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type AccountingDemo,
  fingerprint,
  prepareAccountingDemo,
  readBalance,
  tablesDigest,
} from '../../../examples/accounting/demo';
import { createNotifyServer, readOutbox } from '../../../examples/accounting/notifyServer';
import type { CommitReport } from '../../../src/agent/commit';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { type BlobRef, decodeBlob, readTape, type Tape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { connectTestWorker } from '../../support/temporal';
import { boothTools } from './fixtures/boothTools';
import type { BoothScenario } from './fixtures/boothWorkflows';

const WORKFLOWS = path.join(__dirname, 'fixtures/boothWorkflows.ts');

describe('the Shadow Booth saga commit on Temporal', () => {
  let base: string;
  let demo: AccountingDemo;
  let tapes: string;
  let booth: BoothRuntime;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  let failAt: string | null = null;

  beforeAll(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-saga-'));
    tapes = path.join(base, 'tapes');
    // The demo's folders are reset in place before each test; the worker's booth points at them throughout.
    demo = await prepareAccountingDemo(path.join(base, 'demo'));
    booth = new BoothRuntime({
      // A part that fails after doing its work, the way an activity whose every attempt crashed would end.
      faultPoint: (point) => {
        if (point === failAt)
          throw ApplicationFailure.nonRetryable(`injected failure at ${point}`, 'InjectedFault');
      },
      workspaceRoot: demo.workspace,
      stagingRoot: demo.staging,
      sqlite: demo.database,
      mcpServers: [
        {
          name: 'notify',
          transport: {
            kind: 'in-process',
            createServer: () => createNotifyServer({ outbox: demo.outbox, refuseCustomers: ['C-404'] }),
          },
        },
        { name: 'down', transport: { kind: 'stdio', command: path.join(base, 'no-such-server') } },
      ],
      gates: {
        'allow-all': () => ({ ok: true, reason: 'fine' }),
        'no-secrets': ({ files }) =>
          files.some((f) => f.diff?.includes('password'))
            ? { ok: false, reason: 'a staged file contains a password' }
            : { ok: true },
      },
    });
    env = await connectTestWorker({
      // These agents call no model; nothing listens there.
      endpoints: localEndpoints('http://127.0.0.1:9'),
      tools: boothTools(demo.database),
      workflowsPath: WORKFLOWS,
      booth,
      tape: { dir: tapes },
    });
  });

  afterAll(async () => {
    await env?.close();
    await booth?.close();
  });

  beforeEach(async () => {
    failAt = null;
    await prepareAccountingDemo(demo.dir);
  });

  async function run(workflow: string, scenario: BoothScenario) {
    const handle = await startAgent<BoothScenario, CommitReport>(workflow, scenario, {
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      runOptions: { maximumAttempts: 2, initialRetryIntervalMs: 100 },
    });
    const result = await handle.result().catch((err: unknown) => err);
    const runId = (await handle.describe()).runId;
    const tape = readTape(path.join(tapes, tapeFileName(handle.workflowId, runId)));
    return { result, tape };
  }

  const kinds = (tape: Tape) =>
    tape.frames
      .filter((f) =>
        ['fs.mutation', 'sql.mutation', 'mcp.call', 'commit', 'rollback', 'shell.exec'].includes(
          f.kind ?? '',
        ),
      )
      .map((f) => {
        const p = f.payload as { part?: string; compensation?: boolean; phase?: string };
        return f.kind === 'commit' || f.kind === 'rollback'
          ? `${f.kind}:${p.part}${p.compensation ? ':compensation' : ''}`
          : f.kind === 'mcp.call'
            ? `mcp.call:${p.phase ?? 'escrow'}`
            : f.kind;
      });

  /**
   * After a compensated commit: files and outbox are back byte for byte (the database file is not: it keeps the
   * booth's record of the compensated commit) and no staging is left.
   */
  const expectFilesAndOutboxBack = async (before: Awaited<ReturnType<typeof fingerprint>>) => {
    const after = await fingerprint(demo);
    expect({ workspace: after.workspace, outbox: after.outbox }).toEqual({
      workspace: before.workspace,
      outbox: before.outbox,
    });
    expect(fs.readdirSync(demo.staging)).toEqual([]);
  };

  const failure = (result: unknown) => {
    expect(result).toBeInstanceOf(WorkflowFailedError);
    const cause = (result as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    return cause;
  };

  const stageAll = (customer: string): BoothScenario['stage'] => [
    { tool: 'stage_file', args: { path: 'notes/refund.txt', content: `refund for ${customer}\n` } },
    {
      tool: 'stage_sql',
      args: {
        sql: 'UPDATE accounts SET balance_cents = balance_cents + 500 WHERE id = ?',
        bindings: ['C-1001'],
      },
    },
    {
      tool: 'stage_mcp',
      args: {
        server: 'notify',
        tool: 'notify_customer',
        arguments: { customer: 'C-1001', message: 'hello', notificationId: 'n-ok' },
        compensate: { tool: 'retract_notification', arguments: { notificationId: 'n-ok' } },
      },
    },
  ];

  it('commits files, SQL and MCP calls in one saga and records each part', async () => {
    const { result, tape } = await run('boothAgent', { stage: stageAll('C-1001'), gates: ['allow-all'] });
    const report = (result as { output: CommitReport }).output;
    expect(report.verdicts).toEqual([{ gate: 'allow-all', ok: true, reason: 'fine' }]);
    // Two journal steps: the new notes/ folder and the file in it.
    expect(report.files).toEqual({ steps: 2, recovered: false });
    expect(report.sql).toMatchObject({ statements: 1, rowsAffected: 1, recovered: false });
    expect(report.mcp).toEqual({ applied: 1, skipped: 0 });
    expect(fs.readFileSync(path.join(demo.workspace, 'notes/refund.txt'), 'utf8')).toBe(
      'refund for C-1001\n',
    );
    expect(await readBalance(demo, 'C-1001')).toBe(500);
    expect(readOutbox(demo.outbox).map((n) => n.id)).toEqual(['n-ok']);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    expect(kinds(tape)).toEqual([
      'fs.mutation',
      'fs.mutation',
      'sql.mutation',
      'mcp.call:escrow',
      // The gates' verdict on the full change set, written by verify (offline replay re-runs the gates on it).
      'commit:verify',
      'commit:files',
      'commit:sql',
      'mcp.call:commit',
      'commit:mcp',
      'commit:all',
    ]);
  });

  it('a refusing gate rolls everything back: the run fails typed and the hashes are unchanged', async () => {
    const before = await fingerprint(demo);
    const stage = [
      { tool: 'stage_file', args: { path: 'config.env', content: 'password=hunter2\n' } },
      ...stageAll('C-1001').slice(1),
    ];
    const { result, tape } = await run('boothAgent', { stage, gates: ['allow-all', 'no-secrets'] });
    const cause = failure(result);
    expect(cause.type).toBe('CommitRolledBackError');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toContain('gate no-secrets: a staged file contains a password');
    expect(await fingerprint(demo)).toEqual(before);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    expect(kinds(tape)).toEqual([
      'fs.mutation',
      'sql.mutation',
      'mcp.call:escrow',
      'commit:verify',
      'rollback:all',
    ]);
    const rollback = tape.frames.find((f) => f.kind === 'rollback')!.payload as Record<string, unknown>;
    expect(rollback.reason).toContain('no-secrets');
    expect(JSON.stringify(rollback.discarded)).toContain('config.env');
  });

  it('a later part failing compensates the applied parts in reverse order and ends rolled back', async () => {
    const before = await fingerprint(demo);
    const tablesBefore = await tablesDigest(demo);
    const stage = [
      ...stageAll('C-1001'),
      // The server refuses this customer at commit time: the MCP part fails after files and SQL were applied.
      {
        tool: 'stage_mcp',
        args: {
          server: 'notify',
          tool: 'notify_customer',
          arguments: { customer: 'C-404', message: 'hello' },
        },
      },
    ];
    const { result, tape } = await run('boothAgent', { stage });
    const cause = failure(result);
    expect(cause.type).toBe('CommitRolledBackError');
    expect(cause.message).toContain('committing mcp failed');
    expect(cause.message).toContain('C-404 cannot be reached');
    await expectFilesAndOutboxBack(before);
    // The data is back; the file differs only by the booth's record of the compensated commit.
    expect(await tablesDigest(demo)).toBe(tablesBefore);
    expect(await readBalance(demo, 'C-1001')).toBe(0);
    expect(fs.existsSync(path.join(demo.workspace, 'notes'))).toBe(false);
    expect(kinds(tape)).toEqual([
      'fs.mutation',
      'fs.mutation',
      'sql.mutation',
      'mcp.call:escrow',
      'mcp.call:escrow',
      // The gates' verdict on the full change set, written by verify (offline replay re-runs the gates on it).
      'commit:verify',
      'commit:files',
      'commit:sql',
      'mcp.call:commit',
      'mcp.call:commit',
      'mcp.call:compensate',
      'rollback:mcp:compensation',
      'rollback:sql:compensation',
      'rollback:files:compensation',
      'rollback:all',
    ]);
  });

  it('a SQL part that fails after its transaction committed is undone too, before the files', async () => {
    const before = await fingerprint(demo);
    const tablesBefore = await tablesDigest(demo);
    failAt = 'sql:committed';
    const { result, tape } = await run('boothAgent', { stage: stageAll('C-1001') });
    const cause = failure(result);
    expect(cause.type).toBe('CommitRolledBackError');
    expect(cause.message).toContain('committing sql failed');
    expect(cause.message).toContain('injected failure at sql:committed');
    expect(await tablesDigest(demo)).toBe(tablesBefore);
    expect(await readBalance(demo, 'C-1001')).toBe(0);
    await expectFilesAndOutboxBack(before);
    expect(kinds(tape).slice(-4)).toEqual([
      'commit:files',
      'rollback:sql:compensation',
      'rollback:files:compensation',
      'rollback:all',
    ]);
  });

  it('a conflicting concurrent change to the database fails the SQL part; the files are put back', async () => {
    const stage = [
      ...stageAll('C-1001'),
      { tool: 'tamper_real_db', args: { sql: "UPDATE accounts SET name = 'Countess' WHERE id = 'C-1001'" } },
    ];
    const before = await fingerprint({ ...demo });
    const { result, tape } = await run('boothAgent', { stage });
    const cause = failure(result);
    expect(cause.message).toContain('committing sql failed');
    expect(cause.message).toContain('SqlConflictError');
    await expectFilesAndOutboxBack(before);
    // The real database holds the concurrent change and nothing of the run.
    expect(await readBalance(demo, 'C-1001')).toBe(0);
    expect(kinds(tape).slice(-3)).toEqual(['commit:files', 'rollback:files:compensation', 'rollback:all']);
  });

  it('a real file changed behind the run fails the files part first: nothing of the run lands anywhere', async () => {
    const stage = [
      { tool: 'stage_file', args: { path: 'ledger.csv', content: 'rewritten by the run\n' } },
      ...stageAll('C-1001').slice(1),
      {
        tool: 'tamper_real_file',
        args: { root: demo.workspace, path: 'ledger.csv', content: 'a clerk was here\n' },
      },
    ];
    const tablesBefore = await tablesDigest(demo);
    const outboxBefore = (await fingerprint(demo)).outbox;
    const { result, tape } = await run('boothAgent', { stage });
    const cause = failure(result);
    expect(cause.message).toContain('committing files failed');
    expect(cause.message).toContain('CommitConflictError');
    expect(fs.readFileSync(path.join(demo.workspace, 'ledger.csv'), 'utf8')).toMatch(/a clerk was here\n$/);
    expect(await tablesDigest(demo)).toBe(tablesBefore);
    expect((await fingerprint(demo)).outbox).toBe(outboxBefore);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    expect(kinds(tape).slice(-2)).toEqual(['rollback:files:compensation', 'rollback:all']);
  });

  it('a typed error thrown by the agent discards what it staged and records the rollback', async () => {
    const before = await fingerprint(demo);
    const { result, tape } = await run('boothAgent', { stage: stageAll('C-1001'), fail: true });
    expect(failure(result).type).toBe('AgentGaveUpError');
    expect(await fingerprint(demo)).toEqual(before);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    const rollback = tape.frames
      .filter((f) => f.kind === 'rollback')
      .map((f) => f.payload as Record<string, unknown>);
    expect(rollback).toHaveLength(1);
    expect(rollback[0]!.reason).toContain('the agent gave up on purpose');
  });

  it('an MCP server that is down fails the step clearly; the run is rolled back, nothing touched', async () => {
    const before = await fingerprint(demo);
    const stage = [
      stageAll('C-1001')[0]!,
      { tool: 'stage_mcp', args: { server: 'down', tool: 'anything', arguments: {} } },
    ];
    const { result, tape } = await run('boothAgent', { stage });
    expect(result).toBeInstanceOf(WorkflowFailedError);
    const activity = (result as WorkflowFailedError).cause as ActivityFailure;
    expect(activity).toBeInstanceOf(ActivityFailure);
    expect(activity.cause).toMatchObject({ type: 'McpServerUnavailableError' });
    expect(activity.cause?.message).toContain('MCP server "down" is unavailable');
    expect(await fingerprint(demo)).toEqual(before);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    expect(kinds(tape)).toEqual(['fs.mutation', 'fs.mutation', 'rollback:all']);
  });

  it('a shell command in the booth stages its writes, recorded with content, committed with the rest', async () => {
    const stage = [{ tool: 'stage_shell', args: { command: 'sort -r ledger.csv > reports/sorted.csv' } }];
    const { tape } = await run('boothAgent', {
      stage: [{ tool: 'stage_shell', args: { command: 'mkdir -p reports' } }, ...stage],
    });
    const sorted = fs.readFileSync(path.join(demo.workspace, 'reports/sorted.csv'), 'utf8');
    expect(sorted.split('\n')[0]).toMatch(/^date,/);
    const written = tape.frames.filter((f) => f.kind === 'fs.mutation').at(-1)!.payload as {
      path: string;
      after: BlobRef;
    };
    expect(written.path).toBe('reports/sorted.csv');
    expect(Buffer.from(decodeBlob(tape.blobs.get(written.after.hash)!) as Uint8Array).toString()).toBe(
      sorted,
    );
    expect(kinds(tape)).toEqual([
      'shell.exec',
      'fs.mutation',
      'shell.exec',
      'fs.mutation',
      // The gates' verdict on the full change set, written by verify (offline replay re-runs the gates on it).
      'commit:verify',
      'commit:files',
      // No SQL was staged, so the database was never opened; the empty escrow commits nothing and says so.
      'commit:mcp',
      'commit:all',
    ]);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
  });

  it('a run that completes without ctx.commit rolls back what it staged and records why', async () => {
    const before = await fingerprint(demo);
    const { result, tape } = await run('forgetfulAgent', { stage: stageAll('C-1001') });
    expect((result as { output: unknown }).output).toEqual({ staged: 3 });
    expect(await fingerprint(demo)).toEqual(before);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    expect(kinds(tape)).toEqual([
      'fs.mutation',
      'fs.mutation',
      'sql.mutation',
      'mcp.call:escrow',
      'rollback:all',
    ]);
    const rollback = tape.frames.find((f) => f.kind === 'rollback')!.payload as {
      reason: string;
      discarded: { files: string[]; sql: string[]; mcp: string[] };
    };
    expect(rollback.reason).toContain('completed without ctx.commit()');
    expect(rollback.discarded.sql[0]).toContain('UPDATE accounts');
    expect(rollback.discarded.mcp).toEqual([expect.stringContaining('notify/notify_customer')]);
    expect(tape.outcome).toMatchObject({ status: 'completed' });
  });

  it('ctx.rollback discards on request and says why', async () => {
    const before = await fingerprint(demo);
    const { result, tape } = await run('rollbackAgent', { stage: stageAll('C-1001') });
    expect((result as { output: { booth: boolean; reason: string } }).output).toMatchObject({
      booth: true,
      reason: 'the operator changed their mind',
    });
    expect(await fingerprint(demo)).toEqual(before);
    expect(fs.readdirSync(demo.staging)).toEqual([]);
    expect(kinds(tape).at(-1)).toBe('rollback:all');
  });
});
