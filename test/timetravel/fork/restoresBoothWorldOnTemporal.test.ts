import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import knexFactory from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../src/agent/tools';
import { BoothRuntime, requireBooth } from '../../../src/booth/shadowBooth';
import { JukeboxError } from '../../../src/errors/JukeboxError';
import { localEndpoints } from '../../../src/llm';
import { captureRunHistory, forkRun, startAgent } from '../../../src/temporal';
import { type ModelScript, type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { readTimeline } from '../../../src/timetravel/replay';
import { connectTestWorker } from '../../support/temporal';

const WORKFLOWS = path.join(__dirname, 'fixtures/boothForkAgent.ts');

const tool = (name: string, run: ToolDefinition['run']): ToolDefinition => ({
  spec: { name, description: name, parameters: { type: 'object', properties: {} } },
  run,
});

const TOOLS: ToolDefinition[] = [
  tool('stage_file', async (args, inv) => {
    const files = requireBooth(inv, 'stage_file').files;
    const dir = path.posix.dirname(String(args.path));
    if (dir !== '.') await files.mkdir(dir, { recursive: true });
    await files.writeFile(String(args.path), String(args.content));
    return `staged ${String(args.path)}`;
  }),
  tool('stage_sql', async (args, inv) => {
    const sql = await requireBooth(inv, 'stage_sql').sql();
    const r = await sql.query(String(args.sql));
    return `${String(args.label)}: ${r.rowsAffected} row(s)`;
  }),
  tool('read_staged', async (args, inv) => ({
    path: String(args.path),
    content: await requireBooth(inv, 'read_staged').files.readFile(String(args.path), 'utf8'),
  })),
  tool('query_staged', async (args, inv) => {
    const sql = await requireBooth(inv, 'query_staged').sql();
    return { rows: (await sql.query(String(args.sql))).rows };
  }),
  tool('publish', async () => {
    throw new JukeboxError('PUBLISH_DOWN', 'the publishing service is down (test)', { nonRetryable: true });
  }),
];

const TASK = 'Draft the report, record it in the database, then publish it.';
const UPDATE = "UPDATE notes SET body = 'staged by parent' WHERE id = 1";
const INSERT = "INSERT INTO notes (id, body) VALUES (2, 'inserted by parent')";
const SELECT = 'SELECT id, body FROM notes ORDER BY id';

/**
 * The parent: step 0 asks for two staged file writes (steps 1, 2), step 3 for two staged SQL writes (steps 4,
 * 5), step 6 for `publish` (step 7), which fails: the run ends failed and rolled back, never committed.
 */
const PARENT_SCRIPT: ModelScript = {
  name: 'booth-fork-parent',
  turns: [
    {
      id: 'stage-sql',
      match: { toolResult: 'staged notes/plan.md' },
      reply: {
        toolCalls: [
          { name: 'stage_sql', arguments: { label: 'update', sql: UPDATE } },
          { name: 'stage_sql', arguments: { label: 'insert', sql: INSERT } },
        ],
      },
      repeat: true,
    },
    {
      id: 'publish',
      match: { toolResult: 'insert: 1 row(s)' },
      reply: { toolCalls: [{ name: 'publish', arguments: {} }] },
      repeat: true,
    },
    {
      id: 'stage-files',
      match: { lastUser: 'Draft the report' },
      reply: {
        text: 'Staging the draft first.',
        toolCalls: [
          {
            name: 'stage_file',
            arguments: { path: 'report.txt', content: 'report v2, drafted by the parent\n' },
          },
          { name: 'stage_file', arguments: { path: 'notes/plan.md', content: '# plan from the parent\n' } },
        ],
      },
      repeat: true,
    },
  ],
};

/**
 * The fork from step 6 on: instead of publishing, it reads back what its booth holds (steps 7-9) and answers
 * (step 10). Only the turns after the fork point: the user's question matches every request.
 */
const FORK_SCRIPT: ModelScript = {
  name: 'booth-fork-child',
  turns: [
    {
      id: 'answer',
      match: { toolResult: '"rows"' },
      reply: { text: 'Checked the staged report, plan and notes table.' },
      repeat: true,
    },
    {
      id: 'read-back',
      match: { toolResult: 'insert: 1 row(s)' },
      reply: {
        toolCalls: [
          { name: 'read_staged', arguments: { path: 'report.txt' } },
          { name: 'read_staged', arguments: { path: 'notes/plan.md' } },
          { name: 'query_staged', arguments: { sql: SELECT } },
        ],
      },
      repeat: true,
    },
  ],
};

describe('a fork on Temporal starts from the parent’s staged Shadow Booth world at the fork point', () => {
  let base: string;
  let workspace: string;
  let database: string;
  let staging: string;
  let tapeDir: string;
  let model: ModelServer;
  let booth: BoothRuntime;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  const realRows = async () => {
    const db = knexFactory({ client: 'sqlite3', connection: { filename: database }, useNullAsDefault: true });
    try {
      return (await db.raw('SELECT id, body FROM notes ORDER BY id')) as { id: number; body: string }[];
    } finally {
      await db.destroy();
    }
  };
  const realExec = async (sql: string) => {
    const db = knexFactory({ client: 'sqlite3', connection: { filename: database }, useNullAsDefault: true });
    try {
      await db.raw(sql);
    } finally {
      await db.destroy();
    }
  };
  const real = (p: string) => fs.readFileSync(path.join(workspace, p), 'utf8');

  beforeAll(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-fork-booth-'));
    workspace = path.join(base, 'workspace');
    database = path.join(base, 'app.sqlite');
    staging = path.join(base, 'staging');
    tapeDir = path.join(base, 'tapes');
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(workspace, 'report.txt'), 'report v1, on disk\n');
    fs.writeFileSync(database, '');
    await realExec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    await realExec("INSERT INTO notes (id, body) VALUES (1, 'original')");
    model = await startModelServer({ script: PARENT_SCRIPT });
    booth = new BoothRuntime({ workspaceRoot: workspace, stagingRoot: staging, sqlite: database });
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: TOOLS,
      workflowsPath: WORKFLOWS,
      booth,
      tape: { dir: tapeDir },
    });
  });

  afterAll(async () => {
    await env?.close();
    await booth?.close();
    await model?.close().catch(() => {});
    if (base) fs.rmSync(base, { recursive: true, force: true });
  });

  it('restores the staged files and SQL from the parent tape, not from today’s disk, and touches no real target', async () => {
    // The parent run: stages two files and two SQL writes, then fails at publish (no commit, rolled back).
    const handle = await startAgent(
      'boothForkAgent',
      { task: TASK },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { maximumAttempts: 1 },
      },
    );
    const parentResult = await handle.result().catch((e: unknown) => e);
    // The run failed with publish's own error, typed, through the activity that raised it.
    expect(parentResult).toBeInstanceOf(WorkflowFailedError);
    const activity = (parentResult as WorkflowFailedError).cause;
    expect(activity).toBeInstanceOf(ActivityFailure);
    expect((activity as ActivityFailure).activityType).toBe('toolStep');
    const cause = (activity as ActivityFailure).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({
      type: 'JukeboxError',
      message: 'the publishing service is down (test)',
      nonRetryable: true,
      details: [{ code: 'PUBLISH_DOWN' }],
    });
    const { tapeFile: parentTape } = await captureRunHistory(handle, tapeDir);
    const p = readTimeline(parentTape);
    expect(p.steps.map((s) => (s.kind === 'tool' ? s.toolName : 'llm'))).toEqual([
      'llm',
      'stage_file',
      'stage_file',
      'llm',
      'stage_sql',
      'stage_sql',
      'llm',
      'publish',
    ]);
    expect(p.steps[7]!.error).toEqual({
      name: 'JukeboxError',
      code: 'PUBLISH_DOWN',
      message: 'the publishing service is down (test)',
      nonRetryable: true,
    });
    const frameKinds = p.tape.frames.map((f) => f.kind);
    // report.txt, mkdir notes, notes/plan.md
    expect(frameKinds.filter((k) => k === 'fs.mutation')).toHaveLength(3);
    expect(frameKinds.filter((k) => k === 'sql.mutation')).toHaveLength(2);
    expect(frameKinds).not.toContain('commit');
    expect(frameKinds).toContain('rollback');
    // Nothing the parent staged reached the real targets, and its staging was discarded on rollback: the only
    // place its staged world still exists is the tape.
    expect(real('report.txt')).toBe('report v1, on disk\n');
    expect(fs.existsSync(path.join(workspace, 'notes/plan.md'))).toBe(false);
    expect(await realRows()).toEqual([{ id: 1, body: 'original' }]);

    // Today's disk moves on: every path the parent staged now holds something else for real. (The database
    // moving on is the second half of this test: the tape holds statements, not the rows they started from.)
    fs.writeFileSync(path.join(workspace, 'report.txt'), 'report edited today\n');
    fs.mkdirSync(path.join(workspace, 'notes'));
    fs.writeFileSync(path.join(workspace, 'notes/plan.md'), '# plan written today\n');

    // Fork at step 6, after all staged writes and before publish; the fork reads its booth back instead.
    model.loadScript(FORK_SCRIPT); // resets the request count
    const f = await forkRun({
      parentTape,
      atStep: 6,
      overrides: { system: 'Do not publish; check the staged work.' },
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      tapeDir,
    });
    expect(f.error).toBeUndefined();
    expect(f.result?.output).toEqual({
      answer: 'Checked the staged report, plan and notes table.',
      turns: 4,
    });
    // Steps 6 and 10 went live; the inherited steps 0-5 (including the staging tools) did not run again.
    expect(model.requestCount()).toBe(2);

    const t = readTimeline(f.tapeFile);
    expect(t.tape.header.parent).toMatchObject({ tapeId: p.tape.header.tapeId, forkStep: 6 });
    expect(t.steps.map((s) => (s.kind === 'tool' ? s.toolName : 'llm'))).toEqual([
      'llm',
      'stage_file',
      'stage_file',
      'llm',
      'stage_sql',
      'stage_sql',
      'llm',
      'read_staged',
      'read_staged',
      'query_staged',
      'llm',
    ]);
    // Inside the fork, after the fork point, the booth holds the parent's staged world as of step 6.
    expect(t.steps[7]!.output).toEqual({ path: 'report.txt', content: 'report v2, drafted by the parent\n' });
    expect(t.steps[8]!.output).toEqual({ path: 'notes/plan.md', content: '# plan from the parent\n' });
    expect(t.steps[9]!.output).toEqual({
      rows: [
        { id: 1, body: 'staged by parent' },
        { id: 2, body: 'inserted by parent' },
      ],
    });

    // The fork staged, it did not write: today's files and rows are exactly as today left them.
    expect(real('report.txt')).toBe('report edited today\n');
    expect(real('notes/plan.md')).toBe('# plan written today\n');
    expect(await realRows()).toEqual([{ id: 1, body: 'original' }]);
    // The restored world sat in the fork run's own staging area; the fork completed without committing, so its
    // end rolled that area back and listed what it discarded: the parent's world, restored.
    expect(fs.existsSync(booth.runDir(f.workflowId, f.runId))).toBe(false);
    const discarded = t.tape.frames.filter((fr) => fr.kind === 'rollback').map((fr) => fr.payload) as {
      reason: string;
      discarded: { files: string[]; sql: string[] };
    }[];
    // (notes/ exists on today's disk, so creating it is no change.)
    expect(discarded).toEqual([
      {
        activityId: '8',
        attempt: 1,
        part: 'all',
        reason: 'the run completed without ctx.commit(), so what it staged was discarded',
        discarded: {
          files: [
            'write notes/plan.md: 21 -> 23 bytes, mode 644, +1 -1 lines',
            'write report.txt: 20 -> 33 bytes, mode 644, +1 -1 lines',
          ],
          mcp: [],
          sql: [`${UPDATE} []`, `${INSERT} []`],
        },
      },
    ]);

    // Now the table the parent wrote changes for real: replaying its statements on today's rows would make a
    // world the parent never saw, so a new fork refuses before any step goes live, and touches nothing.
    await realExec("UPDATE notes SET body = 'changed today' WHERE id = 1");
    model.loadScript(FORK_SCRIPT);
    const refused = await forkRun({
      parentTape,
      atStep: 6,
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      tapeDir,
    });
    const why =
      `the parent run ${parentTape} staged SQL against a database whose tables notes have changed since; ` +
      'the tape holds its statements, not its starting rows, so its staged state cannot be restored. ' +
      'Restore the database to the state the parent started from, or fork at a step before its first SQL write.';
    expect(refused.error).toBe(`Workflow execution failed: Activity task failed: ${why}: ${why}`);
    const failed = await refused.handle.result().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    const step = (failed as WorkflowFailedError).cause;
    expect(step).toBeInstanceOf(ActivityFailure);
    expect((step as ActivityFailure).cause).toBeInstanceOf(ApplicationFailure);
    expect((step as ActivityFailure).cause).toMatchObject({
      type: 'ForkWorldChangedError',
      message: why,
      nonRetryable: true,
      details: [{ code: 'FORK_WORLD_CHANGED' }],
    });
    expect(model.requestCount()).toBe(0);
    expect(await realRows()).toEqual([{ id: 1, body: 'changed today' }]);
    expect(real('report.txt')).toBe('report edited today\n');
  });
});
