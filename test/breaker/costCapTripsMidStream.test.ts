import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BreakerTrip } from '../../src/breaker/trip';
import { localEndpoints } from '../../src/llm';
import { UnknownModelPriceError } from '../../src/llm/pricing';
import { readTape } from '../../src/recorder/tape';
import {
  breakerStatus,
  bundleAgentWorkflows,
  closeBreaker,
  JukeboxPlugin,
  startAgentGroup,
} from '../../src/temporal';
import type { AgentGroupInput } from '../../src/temporal/workflow/agentGroupWorkflow';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker, EXAMPLE_WORKFLOWS_PATH } from '../support/temporal';
import { startStreamProxy } from './streamProxy';

// 4,000 characters in 500 chunks, 10 ms apart: five seconds of stream if nobody cuts it.
const LONG = 'The loop goes on and on. '.repeat(160);
const longTurn = { id: 'long', reply: { text: LONG, chunkSize: 8, chunkDelayMs: 10 } };

const group = (breaker: AgentGroupInput['breaker'], model = 'gpt-4o-mini'): AgentGroupInput => ({
  tracks: [{ name: 'writer', provider: 'openai', model }],
  opening: 'Write the report.',
  maxTurns: 1,
  // gpt-4o-mini output is $0.60 per million tokens: $0.0001 buys about 166 tokens, about 670 characters.
  breaker,
});

describe('the cost cap trips mid-stream', () => {
  let model: ModelServer;
  let proxy: Awaited<ReturnType<typeof startStreamProxy>>;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-breaker-tapes-'));

  beforeAll(async () => {
    model = await startModelServer({ script: { turns: [longTurn] } });
    proxy = await startStreamProxy(model.url);
    env = await connectTestWorker({
      endpoints: localEndpoints(proxy.url),
      tools: [],
      tape: { dir: tapeDir },
    });
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
    await model?.close();
  });

  const start = (input: AgentGroupInput) =>
    startAgentGroup(input, {
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
    });
  const tapeOf = (workflowId: string, runId: string) =>
    readTape(path.join(tapeDir, `${workflowId}--${runId}.jbx`));

  it('cancels the stream, fails the run with a typed non-retryable trip and writes a breaker.trip frame', async () => {
    model.loadScript({ turns: [longTurn] });
    proxy.responses.length = 0;
    const handle = await start(group({ capUsd: 0.0001 }));
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(WorkflowFailedError);
    const failure = (err as WorkflowFailedError).cause;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    const app = failure as ApplicationFailure;
    expect(app.type).toBe('BreakerTrippedError');
    expect(app.nonRetryable).toBe(true);
    const trip = (app.details![0] as { code: string; trip: BreakerTrip }).trip;
    expect((app.details![0] as { code: string }).code).toBe('BREAKER_TRIPPED');
    expect(trip.detector).toBe('cost-cap');
    expect(trip.track).toBe('writer');
    expect(trip.spendUsd).toBeGreaterThan(0.0001);
    expect(trip.spendUsd).toBeLessThan(0.0002);

    // The client cut the stream: the model server's response never completed.
    const modelCalls = proxy.responses.filter((r) => r.path.includes('/chat/completions'));
    expect(modelCalls).toHaveLength(1);
    expect(modelCalls[0]!.clientClosedEarly).toBe(true);
    expect(modelCalls[0]!.upstreamEnded).toBe(false);
    // Each of the 500 SSE frames is over 80 bytes of JSON: the whole stream would be more than 40 KB.
    expect(modelCalls[0]!.bytes).toBeLessThan(40_000);
    expect((trip.evidence as { streamedOutputTokens: number }).streamedOutputTokens).toBeLessThan(
      LONG.length / 4 / 4,
    );

    const tape = tapeOf(handle.workflowId, (await handle.describe()).runId);
    const trips = tape.frames.filter((f) => f.kind === 'breaker.trip');
    expect(trips).toHaveLength(1);
    const payload = trips[0]!.payload as { detector: string; track: string; spend: { usd: number } };
    expect(payload).toMatchObject({ detector: 'cost-cap', track: 'writer' });
    expect(payload.spend.usd).toBeCloseTo(trip.spendUsd, 9);
    // The chunks that did arrive are on the tape, then the step's error, then the run's failed outcome.
    const kinds = tape.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds).toContain('llm.chunk');
    expect(kinds.indexOf('breaker.trip')).toBeLessThan(kinds.indexOf('activity.error'));
    expect(kinds).not.toContain('llm.response');
  });

  it('resumes when a jukebox.breaker.close signal raises the cap', async () => {
    model.loadScript({ turns: [longTurn, { id: 'short', reply: { text: 'Short version. DONE' } }] });
    const handle = await start(group({ capUsd: 0.0001, resumeWindowMs: 60_000 }));
    let status = await breakerStatus(handle);
    for (let i = 0; !status.open && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await breakerStatus(handle);
    }
    expect(status.open).toBe(true);
    expect(status.trip?.detector).toBe('cost-cap');
    await closeBreaker(handle, { decision: 'resume', capUsd: 0.01, by: 'test' });
    const result = await handle.result();
    expect(result.resumed).toBe(1);
    expect(result.transcript.map((m) => m.text)).toEqual(['Short version. DONE']);
    const after = await breakerStatus(handle);
    expect(after).toMatchObject({ open: false, trips: 1, resumed: 1, capUsd: 0.01 });
    // The cut stream's spend still counts against the track.
    expect(after.tracks[0]!.spentUsd).toBeGreaterThan(0.0001);
    // The breaker's state lives in the workflow: replaying the history (trip, signal, resume) must reproduce it.
    await Worker.runReplayHistory(
      // The plugin's replay side reads the history's payload claims from the content store beside the tapes.
      {
        workflowBundle: await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH),
        plugins: [new JukeboxPlugin({ tape: { dir: tapeDir } })],
      },
      await handle.fetchHistory(),
    );
  });

  it('fails at once when the human decision is abort', async () => {
    model.loadScript({ turns: [longTurn] });
    // A ten-minute window: if abort were ignored, this test would run into its timeout.
    const handle = await start(group({ capUsd: 0.0001, resumeWindowMs: 600_000 }));
    while (!(await breakerStatus(handle)).open) await new Promise((r) => setTimeout(r, 100));
    await closeBreaker(handle, { decision: 'abort', by: 'test', note: 'too expensive' });
    const err = (await handle.result().catch((e: unknown) => e)) as WorkflowFailedError;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err.cause as ApplicationFailure).type).toBe('BreakerTrippedError');
  });

  it('checks the config and prices in the worker too, when a client skips startAgentGroup', async () => {
    const requestsBefore = model.requestCount();
    const client = new Client({ connection: env.connection, namespace: env.namespace });
    const run = (input: AgentGroupInput) =>
      client.workflow
        .execute('agentGroupWorkflow', {
          taskQueue: env.taskQueue,
          workflowId: `raw-${Date.now()}-${Math.random()}`,
          args: [input],
        })
        // The preflight activity failed: the workflow's failure is that activity's, the typed error its cause.
        .catch((e: unknown) => (e as WorkflowFailedError).cause?.cause as ApplicationFailure);
    const badCap = await run(group({ capUsd: -1 }));
    expect(badCap).toMatchObject({ type: 'BreakerConfigError', nonRetryable: true });
    expect(badCap.message).toContain('capUsd');
    const unpriced = await run(group({ capUsd: 0.5 }, 'gpt-imaginary'));
    expect(unpriced).toMatchObject({ type: 'UnknownModelPriceError', nonRetryable: true });
    expect(model.requestCount()).toBe(requestsBefore);
  });

  it('refuses a model without a price at start-up, before any model call', async () => {
    const requestsBefore = model.requestCount();
    await expect(start(group({ capUsd: 0.5 }, 'gpt-imaginary'))).rejects.toBeInstanceOf(
      UnknownModelPriceError,
    );
    expect(model.requestCount()).toBe(requestsBefore);
  });
});
