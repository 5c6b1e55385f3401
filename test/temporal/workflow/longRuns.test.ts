import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageOutput } from '../../../examples/pages/agent';
import { pageScript } from '../../../examples/pages/pageScript';
import { pageText, pageTool } from '../../../examples/pages/tools';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { readTimeline } from '../../../src/timetravel/replay';
import { connectTestWorker } from '../../support/temporal';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';

type Handle = Awaited<ReturnType<typeof startAgent>>;
const History = temporal.api.history.v1.History;
const PAGE = 8 * 1024;
const firstRunOf = (h: Handle) => (h as unknown as { firstExecutionRunId: string }).firstExecutionRunId;

/** Every execution of a run, first to last: how it ended and its history's size as the server encodes it. */
async function chainOf(handle: Handle) {
  const out: { runId: string; status: string; bytes: number }[] = [];
  for (let runId: string | undefined = firstRunOf(handle); runId; ) {
    const history: temporal.api.history.v1.IHistory = await handle.client
      .getHandle(handle.workflowId, runId)
      .fetchHistory();
    const last = history.events?.at(-1);
    const next: string | undefined =
      last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId || undefined;
    out.push({
      runId,
      status: (temporal.api.enums.v1.EventType[Number(last?.eventType)] ?? '').replace(
        'EVENT_TYPE_WORKFLOW_EXECUTION_',
        '',
      ),
      bytes: History.encode(History.fromObject(history)).finish().length,
    });
    runId = next;
  }
  return out;
}

/** The steps a page run of `pages` pages takes: a model call asking for each page, the page, then the summary. */
function expectedSteps(pages: number, pageBytes: number) {
  const steps: { kind: string; tool: string | null; args: unknown; output: unknown }[] = [];
  for (let n = 0; n < pages; n++)
    steps.push(
      { kind: 'llm', tool: null, args: null, output: null },
      { kind: 'tool', tool: 'read_page', args: { page: n }, output: pageText(n, pageBytes) },
    );
  steps.push({ kind: 'llm', tool: null, args: null, output: null });
  return steps;
}
const stepsOf = (file: string) =>
  readTimeline(file).steps.map((s) => ({
    kind: s.kind,
    tool: s.toolName ?? null,
    args: s.args ?? null,
    output: s.output ?? null,
  }));

describe('a 300-step run of 8 KB pages on the dev server', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  let tapes: string;

  beforeAll(async () => {
    model = await startModelServer({ script: pageScript(150) });
    tapes = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-long-'));
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: [pageTool(PAGE)],
      tape: { dir: tapes },
    });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  // The shape Temporal terminates when the conversation is the model activity's input (52.9 MB of history at
  // turn 112): 150 pages, the 150th request holding all of them (1.2 MB).
  it('completes, every step on its tape, with under 2 KB of history a step', async () => {
    const handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages: 150 },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: false },
      },
    );
    const { output, steps } = await handle.result();
    expect(output).toMatchObject({ answer: 'Read 150 pages.', turns: 151, readChars: 150 * PAGE });
    expect(steps).toHaveLength(301);
    const chain = await chainOf(handle);
    expect(chain.at(-1)!.status).toBe('COMPLETED');
    const historyBytes = chain.reduce((n, x) => n + x.bytes, 0);
    expect(historyBytes / 301).toBeLessThan(2048);
    const tape = path.join(tapes, tapeFileName(handle.workflowId, firstRunOf(handle)));
    expect(readTape(tape).sealed).toBe(true);
    expect(stepsOf(tape)).toEqual(expectedSteps(150, PAGE));
    // The last model request held the whole conversation: the first message and 150 turns of two messages each.
    const last = readTimeline(tape).steps[300]!;
    expect(last.request!.messages).toHaveLength(1 + 150 * 2);
  }, 600_000);
});

describe('a worker SIGKILLed at the continue-as-new boundary', () => {
  let model: ModelServer;
  let connection: Connection;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    // Each model step streams for at least 300 ms: the next segment's first step cannot finish before the kill.
    model = await startModelServer({ script: pageScript(12, { chunkDelayMs: 300 }) });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
  });

  it('resumes in the next execution: the run ends as it would have, each step once on its one tape', async () => {
    const { namespace } = temporalConfigFromEnv();
    const tapes = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-long-kill-'));
    const taskQueue = `can-kill-${Date.now().toString(36)}`;
    const env = {
      JUKEBOX_TASK_QUEUE: taskQueue,
      JUKEBOX_MODEL_URL: model.url,
      JUKEBOX_TAPE_DIR: tapes,
      JUKEBOX_PAGE_BYTES: String(PAGE),
    };
    const start = async () => {
      const w = await spawnWorker(env, 120_000, 'examples/pages/worker.ts');
      workers.push(w);
      return w;
    };
    const worker = await start();
    // 25 steps; a boundary after step 9 and after step 19.
    const handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages: 12 },
      { connection, namespace, taskQueue, runOptions: { breaker: false, continueAsNew: { everySteps: 10 } } },
    );
    const tape = path.join(tapes, tapeFileName(handle.workflowId, firstRunOf(handle)));
    // The first segment's end is on the tape: the workflow task that continues as new is at hand or just done.
    const deadline = Date.now() + 120_000;
    while (!(fs.existsSync(tape) && readTape(tape).frames.some((f) => f.kind === 'segment'))) {
      if (Date.now() > deadline)
        throw new Error(`the first segment never recorded its end:\n${worker.output()}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await worker.kill('SIGKILL');
    const atKill = readTape(tape);
    // Killed at the boundary: the second segment has not finished a step of its own.
    expect(readTimeline(atKill).steps).toHaveLength(10);
    await start();

    const { output, steps } = await handle.result();
    expect(output).toMatchObject({ answer: 'Read 12 pages.', turns: 13, readChars: 12 * PAGE });
    expect(steps).toHaveLength(25);
    expect((await chainOf(handle)).map((x) => x.status)).toEqual([
      'CONTINUED_AS_NEW',
      'CONTINUED_AS_NEW',
      'COMPLETED',
    ]);
    const t = readTape(tape);
    expect(t.sealed).toBe(true);
    expect(stepsOf(tape)).toEqual(expectedSteps(12, PAGE));
    // Each segment's end once (a frame written again by a retried task would carry the same segment number).
    const segments = t.frames
      .filter((f) => f.kind === 'segment')
      .map((f) => (f.payload as { segment: number }).segment);
    expect([...new Set(segments)]).toEqual([0, 1]);
    expect(fs.readdirSync(tapes).filter((f) => f.endsWith('.jbx'))).toEqual([path.basename(tape)]);
  }, 300_000);
});
