import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTemporalCli } from '../../../servers/devserver';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import type { ToolDefinition } from '../../../src/agent/tools';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { TapeCatalog } from '../../../src/recorder/catalog';
import { readTape } from '../../../src/recorder/tape';
import { jukeboxClient, startAgent, waitForApproval } from '../../../src/temporal';
import { waitUntil } from '../../support/history';
import { connectTestWorker } from '../../support/temporal';
import { boothTools } from '../workflow/fixtures/boothTools';

const run = promisify(execFile);
/** The run id of a chain's first execution (the handle startAgent returns knows it). */
const firstRun = (h: unknown) => (h as { firstExecutionRunId: string }).firstExecutionRunId;
type Env = Awaited<ReturnType<typeof connectTestWorker>>;

/** stage_file again, under a name whose every call waits for a person: the run waits with its staging. */
function waitingTool(tools: ToolDefinition[]): ToolDefinition {
  const stage = tools.find((t) => t.spec.name === 'stage_file')!;
  return { ...stage, spec: { ...stage.spec, name: 'publish' }, approval: true };
}

describe('the sweeper settles what a run the server ended left behind', () => {
  let env: Env;
  let booth: BoothRuntime;
  let base: string;
  let cli: string;
  const config = temporalConfigFromEnv();

  const temporal = (...args: string[]) =>
    run(cli, [...args, '--address', config.address, '--namespace', config.namespace]);
  const tapeOf = (workflowId: string, runId: string) =>
    path.join(base, 'tapes', tapeFileName(workflowId, runId));
  const stagingOf = (workflowId: string, runId: string) => booth.runDir(workflowId, runId);
  const sealed = (file: string) => fs.existsSync(file) && readTape(file).sealed;
  const outcomeOf = (file: string) =>
    readTape(file).frames.find((f) => f.kind === 'outcome')!.payload as {
      status: string;
      error: { name: string; message: string };
      runId?: string;
    };
  const sweptRollback = (file: string) =>
    readTape(file)
      .frames.filter((f) => f.kind === 'rollback')
      .map((f) => f.payload as { swept?: boolean; reason: string; discarded: { files: string[] } })
      .find((p) => p.swept);

  /** Stages notes/<name>.txt, then waits for a person before publishing it. */
  const startWaiting = async (name: string, runOptions: Record<string, unknown> = {}) => {
    const handle = await startAgent<unknown, unknown>(
      'boothAgent',
      {
        stage: [
          { tool: 'stage_file', args: { path: `notes/${name}.txt`, content: `draft ${name}` } },
          { tool: 'publish', args: { path: `public/${name}.txt`, content: `final ${name}` } },
        ],
      },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: false, ...runOptions },
      },
    );
    await waitForApproval(handle, { timeoutMs: 60_000 });
    return handle;
  };

  beforeAll(async () => {
    cli = await ensureTemporalCli();
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-sweep-'));
    fs.mkdirSync(path.join(base, 'workspace'));
    booth = new BoothRuntime({
      workspaceRoot: path.join(base, 'workspace'),
      stagingRoot: path.join(base, 'staging'),
    });
    const tools = boothTools(path.join(base, 'unused.db'));
    env = await connectTestWorker({
      endpoints: localEndpoints('http://127.0.0.1:9'),
      tools: [...tools, waitingTool(tools)],
      workflowsPath: path.join(__dirname, '../workflow/fixtures/boothWorkflows.ts'),
      booth,
      tape: { dir: path.join(base, 'tapes') },
      sweeper: { intervalMs: 300, graceMs: 0 },
    });
  });
  afterAll(async () => {
    await env?.close();
    await booth?.close();
  });

  it('`temporal workflow terminate` in the middle of a staged run: staging discarded, tape sealed "terminated"; a run still waiting is left alone', async () => {
    const doomed = await startWaiting('doomed');
    const waiting = await startWaiting('waiting');
    const doomedRun = firstRun(doomed);
    expect(fs.existsSync(stagingOf(doomed.workflowId, doomedRun))).toBe(true);

    await temporal('workflow', 'terminate', '--workflow-id', doomed.workflowId, '--reason', 'operator stop');
    const tape = tapeOf(doomed.workflowId, doomedRun);
    await waitUntil('the terminated run is swept', () => sealed(tape), 30_000);

    expect(fs.existsSync(stagingOf(doomed.workflowId, doomedRun))).toBe(false);
    const outcome = outcomeOf(tape);
    expect(outcome.status).toBe('terminated');
    expect(outcome.error.name).toBe('WorkflowTerminated');
    expect(outcome.error.message).toContain('operator stop');
    const rollback = sweptRollback(tape)!;
    expect(rollback.discarded.files.some((f) => f.includes('notes/doomed.txt'))).toBe(true);
    expect(rollback.reason).toContain('operator stop');
    // Nothing reached the real workspace.
    expect(fs.existsSync(path.join(base, 'workspace/notes'))).toBe(false);
    // Listed as terminated; the staging discarded at the run's end is not a rollback the run decided on.
    const rows = await new TapeCatalog({ dir: path.join(base, 'tapes') }).rows({ outcome: 'terminated' });
    const row = rows.find((r) => r.runId === doomedRun)!;
    expect(row.outcome).toBe('terminated');
    expect(row.rolledBack).toBeNull();

    // The other run waits for its person, as before: its staging and its open tape are untouched.
    expect(fs.existsSync(stagingOf(waiting.workflowId, firstRun(waiting)))).toBe(true);
    expect(sealed(tapeOf(waiting.workflowId, firstRun(waiting)))).toBe(false);
    await waiting.terminate('done with the test');
    await waitUntil('the second run is swept', () => sealed(tapeOf(waiting.workflowId, firstRun(waiting))));
  });

  it('a run that times out is sealed "timed-out" and its staging discarded', async () => {
    const client = jukeboxClient(env.connection, env.namespace);
    const handle = await client.workflow.start('boothAgent', {
      taskQueue: env.taskQueue,
      workflowId: `sweep-timeout-${Date.now().toString(36)}`,
      args: [
        {
          stage: [
            { tool: 'stage_file', args: { path: 'notes/late.txt', content: 'late' } },
            { tool: 'publish', args: { path: 'public/late.txt', content: 'late' } },
          ],
        },
        { breaker: false },
      ],
      workflowExecutionTimeout: '4s',
    });
    const tape = tapeOf(handle.workflowId, firstRun(handle));
    await waitUntil('the timed-out run is swept', () => sealed(tape), 30_000);
    expect(outcomeOf(tape).status).toBe('timed-out');
    expect(sweptRollback(tape)!.discarded.files.some((f) => f.includes('notes/late.txt'))).toBe(true);
    expect(fs.existsSync(stagingOf(handle.workflowId, firstRun(handle)))).toBe(false);
  });

  it('a run terminated in a later segment: the one tape and staging of the run, named after its first execution', async () => {
    // Two staged notes (a segment each), then the wait: the run is in its third execution when it ends.
    const handle = await startAgent<unknown, unknown>(
      'boothAgent',
      {
        stage: [
          { tool: 'stage_file', args: { path: 'notes/one.txt', content: 'one' } },
          { tool: 'stage_file', args: { path: 'notes/two.txt', content: 'two' } },
          { tool: 'publish', args: { path: 'public/two.txt', content: 'two' } },
        ],
      },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: false, continueAsNew: { everySteps: 1 } },
      },
    );
    await waitForApproval(client(handle), { timeoutMs: 60_000 });
    const last = (await handle.describe()).runId;
    expect(last).not.toBe(firstRun(handle));
    await temporal('workflow', 'terminate', '--workflow-id', handle.workflowId, '--reason', 'segment stop');
    const tape = tapeOf(handle.workflowId, firstRun(handle));
    await waitUntil('the chain is swept', () => sealed(tape), 30_000);
    const outcome = outcomeOf(tape);
    expect(outcome.status).toBe('terminated');
    expect(outcome.runId).toBe(last);
    const files = sweptRollback(tape)!.discarded.files;
    expect(files.some((f) => f.includes('notes/one.txt'))).toBe(true);
    expect(files.some((f) => f.includes('notes/two.txt'))).toBe(true);
    expect(fs.existsSync(stagingOf(handle.workflowId, firstRun(handle)))).toBe(false);

    function client(h: typeof handle) {
      // The run's latest execution: the one waiting for a person.
      return jukeboxClient(env.connection, env.namespace).workflow.getHandle(h.workflowId);
    }
  });

  it('a run reset to its start: the replaced execution is sealed "reset" naming the new one, which goes on', async () => {
    const handle = await startWaiting('reset');
    const old = firstRun(handle);
    await temporal(
      'workflow',
      'reset',
      '--workflow-id',
      handle.workflowId,
      '--run-id',
      old,
      '--type',
      'FirstWorkflowTask',
      '--reason',
      'try again',
    );
    await waitUntil('the replaced execution is swept', () => sealed(tapeOf(handle.workflowId, old)), 30_000);
    const outcome = outcomeOf(tapeOf(handle.workflowId, old));
    expect(outcome.status).toBe('reset');
    const now = (
      await jukeboxClient(env.connection, env.namespace).workflow.getHandle(handle.workflowId).describe()
    ).runId;
    expect(now).not.toBe(old);
    expect(outcome.error.message).toContain(now);
    expect(fs.existsSync(stagingOf(handle.workflowId, old))).toBe(false);
    // The new execution staged again under its own id and waits for its person.
    await waitUntil('the new execution waits', () => fs.existsSync(stagingOf(handle.workflowId, now)));
    expect(sealed(tapeOf(handle.workflowId, now))).toBe(false);
    await jukeboxClient(env.connection, env.namespace).workflow.getHandle(handle.workflowId).terminate('end');
  });
});
