import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageOutput } from '../../../examples/pages/agent';
import { pageScript } from '../../../examples/pages/pageScript';
import { pageTool } from '../../../examples/pages/tools';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { readTape, type Tape } from '../../../src/recorder/tape';
import { breakerStatus, claimOf, startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { readTimeline } from '../../../src/timetravel/replay';
import { connectTestWorker } from '../../support/temporal';
import { boothTools } from './fixtures/boothTools';

type Env = Awaited<ReturnType<typeof connectTestWorker>>;
type Handle = Awaited<ReturnType<typeof startAgent>>;

/** The run id of a chain's first run (the handle startAgent returns knows it). */
const firstRunOf = (h: Handle) => (h as unknown as { firstExecutionRunId: string }).firstExecutionRunId;

/** Every run of a chain, first to last, read from the server. */
async function chainOf(handle: Handle): Promise<{ runId: string; events: number; status: string }[]> {
  const out: { runId: string; events: number; status: string }[] = [];
  let runId: string | undefined = firstRunOf(handle);
  while (runId) {
    const history: Awaited<ReturnType<Handle['fetchHistory']>> = await handle.client
      .getHandle(handle.workflowId, runId)
      .fetchHistory();
    const next: string | undefined =
      history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    out.push({ runId, events: history.events?.length ?? 0, status: next ? 'CONTINUED_AS_NEW' : 'CLOSED' });
    runId = next ?? undefined;
  }
  return out;
}

/** A tape's steps as the agent saw them: kind, tool or model, request and answer. */
function stepsOf(tape: Tape) {
  return readTimeline(tape).steps.map((s) => ({
    step: s.step,
    kind: s.kind,
    request: s.request
      ? { model: s.request.model, messages: (s.request.messages as unknown[]).length }
      : null,
    // Tool call ids are the model server's own, numbered per request it served: not the run's.
    response: s.response
      ? { text: s.response.text, toolCalls: s.response.toolCalls.map(({ id: _, ...c }) => c) }
      : null,
    tool: s.toolName ?? null,
    args: s.args ?? null,
    output: s.output ?? null,
  }));
}

describe('a run that continues as new through its tape', () => {
  let model: ModelServer;
  let env: Env;
  let tapes: string;

  beforeAll(async () => {
    model = await startModelServer({ script: pageScript(25) });
    tapes = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-can-'));
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: [pageTool(2048)],
      tape: { dir: tapes },
    });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  const run = async (pages: number, runOptions: Record<string, unknown>) => {
    model.loadScript(pageScript(pages));
    const handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue, runOptions },
    );
    const result = await handle.result();
    const tape = readTape(path.join(tapes, tapeFileName(handle.workflowId, firstRunOf(handle))));
    return { handle, result, tape };
  };

  it('continuing every 20 steps ends with the same result and the same steps on one tape as not continuing', async () => {
    const plain = await run(25, { breaker: false });
    const chain = await run(25, { breaker: false, continueAsNew: { everySteps: 20 } });

    // 51 steps (26 model calls, 25 pages): segments of 20, 20 and 11 steps.
    const runs = await chainOf(chain.handle);
    expect(runs.map((r) => r.status)).toEqual(['CONTINUED_AS_NEW', 'CONTINUED_AS_NEW', 'CLOSED']);
    expect((await chainOf(plain.handle)).map((r) => r.status)).toEqual(['CLOSED']);

    // The readings differ between two runs (each run has its own random seed and clock); all else is the same.
    const { startedAt: _a, draws: _b, ...plainRest } = plain.result.output;
    const { startedAt, draws, ...chainRest } = chain.result.output;
    expect(chainRest).toEqual(plainRest);
    expect(chainRest).toEqual({ answer: 'Read 25 pages.', turns: 26, readChars: 25 * 2048 });
    expect(chain.result.steps).toHaveLength(51);
    expect(chain.result.steps.map((s) => [s.index, s.kind, s.name])).toEqual(
      plain.result.steps.map((s) => [s.index, s.kind, s.name]),
    );

    // One tape for the whole run, sealed once, holding every step once, as the run without segments does.
    expect(chain.tape.sealed).toBe(true);
    expect(stepsOf(chain.tape)).toEqual(stepsOf(plain.tape));
    const kinds = (t: Tape) => {
      const n: Record<string, number> = {};
      for (const f of t.frames) n[String(f.kind)] = (n[String(f.kind)] ?? 0) + 1;
      return n;
    };
    const { segment, ...chainKinds } = kinds(chain.tape);
    const { blob: _c, ...plainKinds } = kinds(plain.tape);
    const { blob: _d, ...chainKindsNoBlobs } = chainKinds;
    expect(chainKindsNoBlobs).toEqual(plainKinds);
    expect(segment).toBe(2);
    const segments = chain.tape.frames
      .filter((f) => f.kind === 'segment')
      .map((f) => f.payload as { runId: string; nextStep: number; reason: string; segment: number });
    expect(segments.map((s) => [s.segment, s.nextStep, s.reason])).toEqual([
      [0, 20, 'steps'],
      [1, 40, 'steps'],
    ]);
    expect(segments.map((s) => s.runId)).toEqual(runs.slice(0, 2).map((r) => r.runId));
    const outcome = chain.tape.frames.find((f) => f.kind === 'outcome')!.payload as { runId?: string };
    expect(outcome.runId).toBe(runs[2]!.runId);

    // The readings the result is made of are the ones on the tape: later segments read them again, not anew.
    const t = readTimeline(chain.tape);
    const clock = t.observations.filter((o) => o.kind === 'clock').map((o) => o.value);
    const random = t.observations.filter((o) => o.kind === 'random').map((o) => o.value);
    expect(clock).toEqual([startedAt]);
    expect(random).toHaveLength(3); // turns 7, 14 and 21, one in each segment
    expect(random.reduce((n, v) => n + Math.floor(v * 1000), 0)).toBe(draws);
    expect(t.observations.map((o) => o.seq)).toEqual([0, 1, 2, 3]);

    // Each later segment starts from a claim: what it carries (every step so far) is in the content store.
    for (const r of runs.slice(1)) {
      const first = (await chain.handle.client.getHandle(chain.handle.workflowId, r.runId).fetchHistory())
        .events![0]!;
      const options = first.workflowExecutionStartedEventAttributes!.input!.payloads![1]!;
      expect(claimOf(options)).toMatchObject({ kind: 'json' });
    }
  });

  it('the circuit breaker goes on with its window and spend: a loop trips at the same step across a boundary', async () => {
    // The model asks for page 3 over and over: the third identical call trips the tool-repeat detector.
    const loop = {
      name: 'loop',
      turns: [
        {
          reply: { text: 'Page 3 again.', toolCalls: [{ name: 'read_page', arguments: { page: 3 } }] },
          repeat: true,
        },
      ],
    };
    const start = (runOptions: Record<string, unknown>) => {
      model.loadScript(loop);
      return startAgent<unknown, PageOutput>(
        'pageAgent',
        { pages: 20 },
        { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue, runOptions },
      );
    };
    const trips = async (handle: Handle) => {
      const err = (await handle.result().catch((e: unknown) => e)) as {
        cause?: { type?: string; details?: unknown[] };
      };
      expect(err.cause?.type).toBe('BreakerTrippedError');
      const status = await breakerStatus(handle);
      return { trips: status.trips, spent: status.tracks[0]!.spentUsd, messages: status.tracks[0]!.messages };
    };
    const plain = await start({});
    // A boundary after every 4 steps: the second and third identical calls are in different segments.
    const chain = await start({ continueAsNew: { everySteps: 4 } });
    const plainTrip = await trips(plain);
    const chainTrip = await trips(chain);
    expect((await chainOf(chain)).length).toBeGreaterThan(1);
    expect(chainTrip).toEqual(plainTrip);
    expect(chainTrip.messages).toBe(3);
    expect(chainTrip.spent).toBeGreaterThan(0);
  });
});

describe('a run that continues as new keeps its Shadow Booth staging', () => {
  let env: Env;
  let booth: BoothRuntime;
  let base: string;

  beforeAll(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-can-booth-'));
    fs.mkdirSync(path.join(base, 'workspace'));
    booth = new BoothRuntime({
      workspaceRoot: path.join(base, 'workspace'),
      stagingRoot: path.join(base, 'staging'),
    });
    env = await connectTestWorker({
      endpoints: localEndpoints('http://127.0.0.1:9'),
      tools: boothTools(path.join(base, 'unused.db')),
      workflowsPath: path.join(__dirname, 'fixtures/boothWorkflows.ts'),
      booth,
      tape: { dir: path.join(base, 'tapes') },
    });
  });
  afterAll(async () => {
    await env?.close();
    await booth?.close();
  });

  it('stages in three segments and commits everything in the last one', async () => {
    const handle = await startAgent<unknown, unknown>(
      'boothAgent',
      {
        stage: ['a', 'b', 'c', 'd', 'e'].map((n) => ({
          tool: 'stage_file',
          args: { path: `notes/${n}.txt`, content: `note ${n}` },
        })),
      },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: false, continueAsNew: { everySteps: 2 } },
      },
    );
    const { output } = (await handle.result()) as { output: { staged: { files: string[] } } };
    // The staged folder and the five notes, three of them staged in earlier segments.
    for (const n of ['a', 'b', 'c', 'd', 'e'])
      expect(output.staged.files.filter((f) => f.includes(`notes/${n}.txt`))).toHaveLength(1);
    expect((await chainOf(handle)).length).toBe(3);
    for (const n of ['a', 'b', 'c', 'd', 'e'])
      expect(fs.readFileSync(path.join(base, 'workspace/notes', `${n}.txt`), 'utf8')).toBe(`note ${n}`);
    // One staging folder for the run, under its first segment's id, gone after the commit.
    expect(fs.readdirSync(path.join(base, 'staging'), { recursive: true })).toEqual([]);
    const tape = readTape(path.join(base, 'tapes', tapeFileName(handle.workflowId, firstRunOf(handle))));
    expect(
      tape.frames.filter((f) => f.kind === 'commit' && (f.payload as { part: string }).part === 'all'),
    ).toHaveLength(1);
    expect(fs.readdirSync(path.join(base, 'tapes')).filter((f) => f.endsWith('.jbx'))).toHaveLength(1);
  });
});
