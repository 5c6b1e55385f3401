import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageOutput } from '../../examples/pages/agent';
import { pageScript } from '../../examples/pages/pageScript';
import { pageTool } from '../../examples/pages/tools';
import { localEndpoints } from '../../src/llm';
import { tapeFileName } from '../../src/recorder';
import { captureRunHistory, startAgent } from '../../src/temporal';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { readTimeline } from '../../src/timetravel/replay';
import { connectTestWorker } from '../support/temporal';
import { runJbx } from './replay/jbx';

type Handle = Awaited<ReturnType<typeof startAgent>>;
const firstRunOf = (h: Handle) => (h as unknown as { firstExecutionRunId: string }).firstExecutionRunId;

/** A step as the agent saw it, without the model server's own tool call ids. */
const stepsOf = (file: string) =>
  readTimeline(file).steps.map((s) => ({
    kind: s.kind,
    text: s.response?.text ?? null,
    tool: s.toolName ?? null,
    args: s.args ?? null,
    output: s.output ?? null,
  }));

// 25 pages: 51 steps (26 model calls, 25 pages) in three executions of 20, 20 and 11 steps.
describe('a run that continued as new reads as one run in every jbx command', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  let tapes: string;
  let tape: string;
  let handle: Handle;
  let runIds: string[];
  let project: string;
  const jbx = (args: string[], opts: { offline?: boolean; env?: NodeJS.ProcessEnv } = {}) =>
    runJbx(args, {
      ...(opts.offline ? { offline: true } : {}),
      env: { JUKEBOX_TAPE_DIR: tapes, JUKEBOX_TASK_QUEUE: env.taskQueue, ...opts.env },
    });

  beforeAll(async () => {
    model = await startModelServer({ script: pageScript(25) });
    tapes = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-chain-'));
    // A fork runs the agent from source: a project whose agents include the page agent.
    project = path.join(tapes, 'project');
    fs.mkdirSync(project);
    const examples = path.join(__dirname, '../../examples');
    fs.writeFileSync(
      path.join(project, 'jukebox.config.json'),
      JSON.stringify({
        agents: [path.join(examples, 'pages/agent.ts')],
        workflows: path.join(examples, 'workflows.ts'),
      }),
    );
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: [pageTool(2048)],
      tape: { dir: tapes },
    });
    handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages: 25 },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: false, continueAsNew: { everySteps: 20 } },
      },
    );
    await handle.result();
    const { tapeFile, sidecar } = await captureRunHistory(handle, tapes);
    tape = tapeFile;
    runIds = [sidecar.runId, ...(sidecar.segments ?? []).map((s) => s.runId)];
  }, 240_000);
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  it('its history is stored beside its one tape, one file per execution', () => {
    expect(tape).toBe(path.join(tapes, tapeFileName(handle.workflowId, firstRunOf(handle))));
    expect(runIds).toHaveLength(3);
    expect(runIds[0]).toBe(firstRunOf(handle));
    expect(new Set(runIds).size).toBe(3);
    expect(fs.readdirSync(tapes).filter((f) => f.endsWith('.jbx'))).toEqual([path.basename(tape)]);
  });

  it('jbx ls lists it once, with all 51 steps', async () => {
    const r = await jbx(['ls', '--dir', tapes, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as {
      workflowId: string;
      runId: string;
      steps: number;
      outcome: string;
    }[];
    const mine = rows.filter((x) => x.workflowId === handle.workflowId);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ runId: runIds[0], steps: 51 });
  });

  it('jbx show --events puts each step under its execution, with that execution’s event ids', async () => {
    const r = await jbx(['show', tape, '--events', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const shown = JSON.parse(r.stdout) as {
      segments: { runId: string; firstStep: number }[];
      steps: { step: number; runId?: string; first: number; last: number }[];
    };
    expect(shown.segments.map((s) => [s.runId, s.firstStep])).toEqual([
      [runIds[0], 0],
      [runIds[1], 20],
      [runIds[2], 40],
    ]);
    expect(shown.steps).toHaveLength(51);
    const runOf = (step: number) => shown.steps[step]!.runId;
    expect([runOf(0), runOf(19), runOf(20), runOf(39), runOf(40), runOf(50)]).toEqual([
      runIds[0],
      runIds[0],
      runIds[1],
      runIds[1],
      runIds[2],
      runIds[2],
    ]);
    // Event ids start again in each execution: step 40's events are early ids of the third execution's history.
    expect(shown.steps[40]!.first).toBeLessThan(shown.steps[39]!.first);
    const human = await jbx(['show', tape, '--events']);
    expect(human.stdout).toMatch(/continued as new 2 times/);
    expect(human.stdout).toMatch(new RegExp(`execution 2 run ${runIds[2]}: events 1\\.\\.\\d+`));
  });

  it('jbx replay replays all 51 steps offline, and replay --temporal replays each execution', async () => {
    const offline = await jbx(['replay', tape, '--json'], { offline: true });
    expect(offline.code, offline.stderr).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ status: 'match', steps: 51 });

    const t = await jbx(['replay', '--temporal', tape, '--json']);
    expect(t.code, t.stderr).toBe(0);
    const report = JSON.parse(t.stdout) as {
      deterministic: boolean;
      segments: { runId: string; deterministic: boolean }[];
    };
    expect(report.deterministic).toBe(true);
    expect(report.segments.map((s) => [s.runId, s.deterministic])).toEqual(runIds.map((id) => [id, true]));
  });

  it('jbx bundle carries every execution’s history and the content they refer to: replay --temporal needs no store', async () => {
    const out = path.join(tapes, 'chain.jbxb');
    const b = await jbx(['bundle', tape, '-o', out, '--json']);
    expect(b.code, b.stderr).toBe(0);
    const m = JSON.parse(b.stdout).manifest as {
      history: { part: string; runId: string };
      segments: { part: string; runId: string }[];
      content: { blobs: number };
    };
    expect([m.history, ...m.segments].map((x) => [x.part, x.runId])).toEqual([
      ['history.pb', runIds[0]],
      ['history-1.pb', runIds[1]],
      ['history-2.pb', runIds[2]],
    ]);
    // What the later executions started from (every step so far) is a claim in their first event.
    expect(m.content.blobs).toBeGreaterThanOrEqual(2);

    // No network, and a content store that holds nothing: the claims resolve from the bundle alone.
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-chain-empty-content-'));
    const r = await jbx(['replay', '--temporal', out, '--json'], {
      offline: true,
      env: { JUKEBOX_CONTENT_DIR: empty, JUKEBOX_TAPE_DIR: empty },
    });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { deterministic: boolean; segments: { runId: string }[] };
    expect(report.deterministic).toBe(true);
    expect(report.segments.map((s) => s.runId)).toEqual(runIds);
    expect(fs.readdirSync(empty)).toEqual([]);
  });

  it('jbx fork at step 45, in the third execution, inherits 45 steps and ends as the run did', async () => {
    model.loadScript(pageScript(25));
    const before = model.requestCount();
    const r = await jbx(['fork', tape, '--at', '45', '--project', project, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { status: string; output: PageOutput; tape: string };
    expect(out.status).toBe('completed');
    expect(out.output).toMatchObject({ answer: 'Read 25 pages.', turns: 26, readChars: 25 * 2048 });
    // Step 45 reads page 22; the model is asked at steps 46, 48 and 50 only.
    expect(model.requestCount() - before).toBe(3);
    const fork = readTimeline(out.tape);
    expect(fork.tape.header.parent?.forkStep).toBe(45);
    expect(fork.steps.filter((s) => s.activityId.startsWith('inherited-'))).toHaveLength(45);
    expect(stepsOf(out.tape)).toEqual(stepsOf(tape));

    const d = await jbx(['diff', tape, out.tape, '--json']);
    expect(d.code, d.stderr).toBe(0);
    // Steps 0..47 agree; the model server numbers its tool call ids per request it serves, so the first request
    // that quotes an id it handed out again (step 48, quoting step 46's call) is all that differs.
    const diff = JSON.parse(d.stdout) as {
      firstDivergence: number;
      rows: { differences: { field: string; a: string; b: string }[] }[];
    };
    expect(diff.firstDivergence).toBe(48);
    expect(diff.rows[48]!.differences).toEqual([
      {
        field: 'messages',
        a: expect.stringMatching(/^messages\[47\]\.toolCalls\[0\]\.id: call_/),
        b: expect.stringMatching(/^messages\[47\]\.toolCalls\[0\]\.id: call_/),
      },
    ]);
  });

  it('jbx fork --event needs --run-id for a run of several executions, and forks in the one it names', async () => {
    const shown = JSON.parse((await jbx(['show', tape, '--events', '--json'])).stdout) as {
      steps: { step: number; events: { id: number; type: string }[] }[];
    };
    const started = shown.steps[46]!.events.find((e) => e.type === 'ActivityTaskStarted')!;
    const ambiguous = await jbx(['fork', tape, '--event', String(started.id)]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/continued as new: it has 3 executions/);
    expect(ambiguous.stderr).toMatch(/--run-id/);

    model.loadScript(pageScript(25));
    const r = await jbx([
      'fork',
      tape,
      '--event',
      String(started.id),
      '--run-id',
      runIds[2]!,
      '--project',
      project,
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { status: string; tape: string; output: PageOutput };
    expect(out.status).toBe('completed');
    expect(out.output.answer).toBe('Read 25 pages.');
    expect(readTimeline(out.tape).tape.header.parent?.forkStep).toBe(46);
  });
});
