import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { researchTools } from '../../examples/sample/tools';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { defineAgent } from '../../src/agent';
import type { ToolDefinition } from '../../src/agent/tools';
import { BreakerConfigError } from '../../src/breaker';
import type { BreakerTrip } from '../../src/breaker/trip';
import { localEndpoints } from '../../src/llm';
import { readTape } from '../../src/recorder/tape';
import {
  breakerStatus,
  bundleAgentWorkflows,
  closeBreaker,
  createJukeboxWorker,
  startAgent,
} from '../../src/temporal';
import { type ModelScript, type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { completedActivityCalls } from '../support/history';
import type { NoteAgentInput } from './fixtures/singleAgentWorkflows';
import { startStreamProxy } from './streamProxy';

const WORKFLOWS = path.join(__dirname, 'fixtures/singleAgentWorkflows.ts');

// The same request four times in other words: no two messages are equal, their meaning is.
const PARAPHRASES = [
  'I cannot open the notes file from here; could you attach it so I can continue?',
  'The notes file will not open on my side. Please attach it and I will carry on.',
  'I am unable to open the notes file here, so please attach it for me to continue.',
  'Opening the notes file fails for me; attach it, please, and then I can go on.',
];

// Fourteen pages of a healthy crawl, each followed by a note that says something new about it.
const FINDINGS = [
  'mostly crash reports from the Android build, which takes 22 minutes',
  'about billing: three customers reported missing invoices',
  'flaky tests in the CI pipeline, half of them in the search ranking suite',
  'the vendor contract, which renews automatically in March',
  'the cache hit rate, which dropped to 61 percent after the deploy',
  'two endpoints that still accept unauthenticated calls',
  'the staging database, now 40 GB larger than production',
  'error budgets, exhausted on day 19 of the quarter',
  'a retry policy that doubles traffic during outages',
  'the new index, which cut query time by a factor of four',
  'feature flags: half of them have not changed in a year',
  'the nightly job overlapping with the backup window',
  'checkout latency, dominated at p99 by fraud scoring',
  'log volume, which grew three times since September',
];

const healthyScript: ModelScript = {
  name: 'healthy-crawl',
  turns: [
    ...FINDINGS.flatMap((finding, i) => [
      {
        id: `fetch-${i + 1}`,
        reply: {
          text: `Fetching page ${i + 1}.`,
          toolCalls: [{ name: 'list_issues', arguments: { page: i + 1 } }],
        },
      },
      // Streamed at a real API's pace, so spend velocity sees real time between steps.
      {
        id: `note-${i + 1}`,
        reply: { text: `Page ${i + 1} is ${finding}.`, chunkSize: 8, chunkDelayMs: 25 },
      },
    ]),
    { id: 'done', reply: { text: 'All fourteen pages are read. DONE' } },
  ],
};

const loopingScript: ModelScript = {
  name: 'paraphrase-loop',
  turns: [
    { id: 'write', reply: { toolCalls: [{ name: 'write_note', arguments: { text: 'draft 1' } }] } },
    ...PARAPHRASES.map((text, i) => ({ id: `stuck-${i + 1}`, reply: { text } })),
    { id: 'never', reply: { text: 'unreachable DONE' } },
  ],
};

// The same plea twice while calling a tool (page 1, page 2: the tool calls differ), then a third time without one.
const toolTurnLoopScript: ModelScript = {
  name: 'tool-turn-paraphrase-loop',
  turns: [
    ...PARAPHRASES.slice(0, 2).map((text, i) => ({
      id: `asks-${i + 1}`,
      reply: { text, toolCalls: [{ name: 'list_issues', arguments: { page: i + 1 } }] },
    })),
    { id: 'asks-3', reply: { text: PARAPHRASES[2]! } },
    { id: 'never', reply: { text: 'unreachable DONE' } },
  ],
};

// 4,000 characters in 500 chunks, 10 ms apart: five seconds of stream if nobody cuts it.
const LONG = 'The loop goes on and on. '.repeat(160);
const longScript = (after?: string): ModelScript => ({
  name: 'long',
  turns: [
    { id: 'long', reply: { text: LONG, chunkSize: 8, chunkDelayMs: 10 } },
    ...(after ? [{ id: 'short', reply: { text: after } }] : []),
  ],
});

const writeNote: ToolDefinition = {
  spec: { name: 'write_note', parameters: { type: 'object', properties: { text: { type: 'string' } } } },
  async run(args, { booth }) {
    if (!booth) throw new Error('write_note needs the Shadow Booth');
    await booth.files.writeFile('notes.md', String(args.text));
    return { staged: 'notes.md' };
  },
};
const listIssues: ToolDefinition = {
  spec: { name: 'list_issues', parameters: { type: 'object', properties: { page: { type: 'number' } } } },
  async run(args) {
    return { page: args.page, issues: 50 };
  },
};

function tripOfFailure(err: unknown): { failure: ApplicationFailure; trip: BreakerTrip } {
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const failure = (err as WorkflowFailedError).cause as ApplicationFailure;
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect(failure.type).toBe('BreakerTrippedError');
  expect(failure.nonRetryable).toBe(true);
  return { failure, trip: (failure.details![0] as { trip: BreakerTrip }).trip };
}

describe('every agentWorkflow run has a circuit breaker', () => {
  let model: ModelServer;
  let proxy: Awaited<ReturnType<typeof startStreamProxy>>;
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `test-single-breaker-${Date.now().toString(36)}`;
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'jukebox-single-ws-'));
  const staging = mkdtempSync(path.join(os.tmpdir(), 'jukebox-single-staging-'));
  const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-single-tapes-'));
  const namespace = temporalConfigFromEnv().namespace;

  beforeAll(async () => {
    model = await startModelServer({ script: healthyScript });
    proxy = await startStreamProxy(model.url);
    const config = temporalConfigFromEnv();
    env = await TestWorkflowEnvironment.createFromExistingServer({
      address: config.address,
      namespace: config.namespace,
    });
    worker = await createJukeboxWorker({
      connection: env.nativeConnection,
      namespace: config.namespace,
      taskQueue,
      endpoints: localEndpoints(proxy.url),
      tools: [writeNote, listIssues, ...researchTools],
      workflowBundle: await bundleAgentWorkflows(WORKFLOWS),
      tape: { dir: tapeDir },
      booth: { workspaceRoot: workspace, stagingRoot: staging },
    });
    running = worker.run();
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
    await proxy?.close();
    await model?.close();
  });

  const start = (
    input: NoteAgentInput | Record<string, unknown>,
    options: Parameters<typeof startAgent>[2] | object = {},
    agent = 'noteAgent',
  ) => startAgent(agent, input, { connection: env.connection, namespace, taskQueue, ...options });
  const tapeOf = async (handle: { workflowId: string; describe(): Promise<{ runId: string }> }) =>
    readTape(path.join(tapeDir, `${handle.workflowId}--${(await handle.describe()).runId}.jbx`));

  it('a healthy run of 40+ steps with the default breaker does not trip', async () => {
    model.loadScript(healthyScript);
    const handle = await start({ task: 'List the open issues, page by page.', maxTurns: 40 });
    const result = (await handle.result()) as { output: { turns: number; steps: number } };
    expect(result.output.turns).toBe(29);
    expect(result.output.steps).toBeGreaterThanOrEqual(43);
    const status = await breakerStatus(handle);
    expect(status).toMatchObject({ open: false, trips: 0, capUsd: 2 });
    expect(status.tracks[0]).toMatchObject({ track: 'noteAgent', messages: 29 });
    expect(status.tracks[0]!.spentUsd).toBeGreaterThan(0);
    // The semantic detector compared sentence embeddings: nothing degraded to n-grams.
    expect(status.degraded).toEqual([]);
  }, 120_000);

  it('a looping agent trips on meaning (sentence embeddings), its staged write is rolled back, the trip is on the tape', async () => {
    model.loadScript(loopingScript);
    const handle = await start({ task: 'Write the release note.', maxTurns: 12 });
    const { trip } = tripOfFailure(await handle.result().catch((e: unknown) => e));
    expect(trip.detector).toBe('semantic-repeat');
    expect(trip.track).toBe('noteAgent');
    expect(trip.reason).toContain('sentence-embedding');
    const matches = (trip.evidence as { matches: { excerpt: string; score: number }[] }).matches;
    expect(matches.map((m) => m.excerpt)).toEqual(PARAPHRASES.slice(0, 2));
    expect(Math.min(...matches.map((m) => m.score))).toBeGreaterThanOrEqual(0.8);
    // The third paraphrase tripped it: the fourth and the rest were never asked for.
    expect(model.servedTurns().map((t) => t.turnId)).toEqual(['write', 'stuck-1', 'stuck-2', 'stuck-3']);

    expect(existsSync(path.join(workspace, 'notes.md'))).toBe(false);
    const tape = await tapeOf(handle);
    const kinds = tape.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds).toContain('fs.mutation');
    const tripFrame = tape.frames.find((f) => f.kind === 'breaker.trip')!.payload as Record<string, unknown>;
    expect(tripFrame).toMatchObject({ detector: 'semantic-repeat', track: 'noteAgent' });
    const rollback = tape.frames.find((f) => f.kind === 'rollback')!.payload as { reason: string };
    expect(rollback.reason).toContain('Circuit breaker tripped on track "noteAgent"');
    expect(kinds.indexOf('breaker.trip')).toBeLessThan(kinds.indexOf('rollback'));
    expect(readdirSync(staging).flatMap((d) => readdirSync(path.join(staging, d)))).toEqual([]);
  }, 60_000);

  it('a tool turn defers its embedding to the next model step, and a later message is still compared with it by meaning', async () => {
    model.loadScript(toolTurnLoopScript);
    const handle = await start({ task: 'Write the release note.', maxTurns: 12 });
    const { trip } = tripOfFailure(await handle.result().catch((e: unknown) => e));
    // Only sentence embeddings see these paraphrases as repeats (their n-gram cosine is under 0.5): the two tool
    // turns' embeddings were in the window when the third message was checked.
    expect(trip.detector).toBe('semantic-repeat');
    expect(trip.reason).toContain('sentence-embedding');
    const matches = (trip.evidence as { matches: { excerpt: string }[] }).matches;
    expect(matches.map((m) => m.excerpt)).toEqual(PARAPHRASES.slice(0, 2));
    expect((await breakerStatus(handle)).degraded).toEqual([]);

    type Observed = {
      breaker?: {
        features: { embedding?: number[]; embeddingDeferred?: boolean };
        embedded?: { step: number; embedding?: number[] }[];
      };
    };
    const llmResults = (await completedActivityCalls<{ step: number }, Observed>(handle, 'llmStep')).map(
      (c) => ({ step: c.input.step, result: c.result }),
    );
    const [first, second, third] = llmResults;
    // Each tool turn came back without its embedding; the next model step brought it.
    expect(first!.result.breaker!.features).toMatchObject({ embeddingDeferred: true });
    expect(first!.result.breaker!.features.embedding).toBeUndefined();
    expect(second!.result.breaker!.features).toMatchObject({ embeddingDeferred: true });
    expect(second!.result.breaker!.embedded!.map((e) => [e.step, e.embedding?.length])).toEqual([
      [first!.step, 384],
    ]);
    // The plain answer is compared at once: its own embedding is computed in its step, with the last deferred one.
    expect(third!.result.breaker!.features.embeddingDeferred).toBeUndefined();
    expect(third!.result.breaker!.features.embedding).toHaveLength(384);
    expect(third!.result.breaker!.embedded!.map((e) => [e.step, e.embedding?.length])).toEqual([
      [second!.step, 384],
    ]);
  }, 60_000);

  it('the cost cap cancels a stream mid-way', async () => {
    model.loadScript(longScript());
    proxy.responses.length = 0;
    const handle = await start({ task: 'Write the report.', maxTurns: 3 }, { breaker: { capUsd: 0.0001 } });
    const { trip } = tripOfFailure(await handle.result().catch((e: unknown) => e));
    expect(trip).toMatchObject({ detector: 'cost-cap', track: 'noteAgent' });
    expect(trip.spendUsd).toBeGreaterThan(0.0001);
    expect(trip.spendUsd).toBeLessThan(0.0002);
    const calls = proxy.responses.filter((r) => r.path.includes('/chat/completions'));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ clientClosedEarly: true, upstreamEnded: false });
    expect(calls[0]!.bytes).toBeLessThan(40_000);
    const kinds = (await tapeOf(handle)).frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds).toContain('llm.chunk');
    expect(kinds.indexOf('breaker.trip')).toBeLessThan(kinds.indexOf('activity.error'));
  }, 60_000);

  it('resumes on a jukebox.breaker.close signal with a higher cap: the same call goes out again', async () => {
    model.loadScript(longScript('Short version. DONE'));
    const handle = await start(
      { task: 'Write the report.', maxTurns: 3 },
      { breaker: { capUsd: 0.0001, resumeWindowMs: 60_000 } },
    );
    let status = await breakerStatus(handle).catch(() => undefined);
    for (let i = 0; !status?.open && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await breakerStatus(handle).catch(() => undefined);
    }
    expect(status?.trip?.detector).toBe('cost-cap');
    await closeBreaker(handle, { decision: 'resume', capUsd: 0.01, by: 'test' });
    const result = (await handle.result()) as { output: { answer: string } };
    expect(result.output.answer).toBe('Short version. DONE');
    expect(await breakerStatus(handle)).toMatchObject({ open: false, trips: 1, resumed: 1, capUsd: 0.01 });
  }, 60_000);

  it('a LangGraph agent trips too: the graph keeps asking for the same tool call', async () => {
    model.loadScript({
      name: 'graph-loop',
      turns: [
        {
          id: 'same-call',
          reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'moon distance km' } }] },
          repeat: true,
        },
      ],
    });
    const handle = await start({ question: 'How far is the Moon?', maxTurns: 8 }, {}, 'langGraphAgent');
    const { trip } = tripOfFailure(await handle.result().catch((e: unknown) => e));
    expect(trip).toMatchObject({ detector: 'tool-repeat', track: 'langGraphAgent' });
    expect(model.servedTurns()).toHaveLength(3);
  }, 60_000);

  it('breaker: false runs without one', async () => {
    model.loadScript(loopingScript);
    const handle = await start({ task: 'Write the release note.', maxTurns: 12 }, { breaker: false });
    const result = (await handle.result()) as { output: { answer: string } };
    expect(result.output.answer).toBe('unreachable DONE');
  }, 60_000);

  it('bad input: a cap that is not a positive number fails at start-up, a model without a price before any call', async () => {
    for (const capUsd of [-1, 0, Number.NaN, Number.POSITIVE_INFINITY, '5', undefined])
      await expect(
        start({ task: 'x', maxTurns: 1 }, { breaker: { capUsd: capUsd as number } }),
      ).rejects.toBeInstanceOf(BreakerConfigError);
    expect(() => defineAgent('badCap', async () => 1, { breaker: { capUsd: -3 } })).toThrow(
      BreakerConfigError,
    );

    // A client that skips startAgent gets the same typed error from the run itself.
    const client = new Client({ connection: env.connection, namespace });
    const raw = await client.workflow
      .execute('noteAgent', {
        taskQueue,
        workflowId: `raw-${Date.now()}`,
        args: [{ task: 'x', maxTurns: 1 }, { breaker: { capUsd: -1 } }],
      })
      .catch((e: unknown) => (e as WorkflowFailedError).cause as ApplicationFailure);
    expect(raw).toMatchObject({ type: 'BreakerConfigError', nonRetryable: true });
    expect(raw.message).toContain('capUsd');

    model.loadScript(loopingScript);
    const before = model.requestCount();
    const unpriced = await start({ task: 'x', maxTurns: 1, model: 'gpt-imaginary' });
    const err = (await unpriced.result().catch((e: unknown) => e)) as WorkflowFailedError;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err.cause?.cause as ApplicationFailure | undefined)?.type).toBe('UnknownModelPriceError');
    expect(model.requestCount()).toBe(before);
  }, 60_000);
});
