import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../examples/sample/agent';
import { researchTools } from '../../examples/sample/tools';
import { localEndpoints } from '../../src/llm';
import { TapeStore } from '../../src/recorder';
import {
  BlobRef,
  chunkEntries,
  derefValue,
  ENTRIES_BLOB_MIN,
  readTape,
  type Tape,
  verifyTape,
} from '../../src/recorder/tape';
import { startAgent } from '../../src/temporal';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker } from '../support/temporal';
import { tempDir } from './helpers';

const RECORDER_WORKFLOWS = path.join(__dirname, 'fixtures/workflows.ts');

const SAMPLE_SCRIPT = path.join(__dirname, '../../examples/sample/script.yaml');
const FAKE_KEY = 'sk-test-FAKEKEY0123456789abcdef';
const QUESTION = `How many times around the Earth is the distance to the Moon? (my key is ${FAKE_KEY})`;

type P = Record<string, unknown>;
const payloads = (tape: Tape, kind: string) =>
  tape.frames.filter((f) => f.kind === kind).map((f) => f.payload as P);

describe('a recorded run', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  const tmp = tempDir();
  const store = new TapeStore({ dir: tmp.dir });

  beforeAll(async () => {
    model = await startModelServer({ script: SAMPLE_SCRIPT });
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      workflowsPath: RECORDER_WORKFLOWS,
      tape: { dir: tmp.dir },
    });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
    tmp.cleanup();
  });

  const run = async <O>(workflow: string, input: P, runOptions = {}) => {
    const handle = await startAgent<P, O>(workflow, input, {
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      runOptions,
    });
    const result = await handle.result().catch((e: unknown) => e);
    return { handle, result, file: store.pathFor(handle.workflowId, (await handle.describe()).runId) };
  };

  it('holds every step of the sample agent: requests, chunks, responses, tool calls, activities, outcome, seal', async () => {
    model.loadScript(SAMPLE_SCRIPT);
    const { handle, result, file } = await run<ResearchOutput>('researchAgent', { question: QUESTION });
    expect((result as { output: ResearchOutput }).output.turns).toBe(4);
    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
    const tape = readTape(file);
    const runId = (await handle.describe()).runId;
    expect(tape.header).toMatchObject({
      workflowType: 'researchAgent',
      workflowId: handle.workflowId,
      runId,
      taskQueue: env.taskQueue,
      tapeId: `${handle.workflowId}/${runId}`,
    });
    expect(tape.header.agentCodeHash).toMatch(/^blake3:[0-9a-f]{64}$/);

    const kinds = tape.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds.filter((k) => k === 'llm.request')).toHaveLength(4);
    expect(kinds.filter((k) => k === 'llm.response')).toHaveLength(4);
    // One llm.chunk frame per streamed model step, carrying every chunk of it.
    expect(kinds.filter((k) => k === 'llm.chunk')).toHaveLength(4);
    expect(kinds.filter((k) => k === 'tool.call')).toHaveLength(3);
    expect(kinds.filter((k) => k === 'tool.result')).toHaveLength(3);
    expect(kinds.slice(-2)).toEqual(['outcome', 'seal']);

    // Seven steps, each bracketed by activity frames carrying its Temporal identity, in step order. The workflow
    // and run ids are the header's, so the frames leave them out (FORMAT.md "Payload schemas").
    expect(tape.header).toMatchObject({ workflowId: handle.workflowId, runId });
    const starts = payloads(tape, 'activity.start');
    expect(starts.map((s) => s.activityType)).toEqual([
      'llmStep',
      'toolStep',
      'llmStep',
      'toolStep',
      'llmStep',
      'toolStep',
      'llmStep',
    ]);
    for (const s of [...starts, ...payloads(tape, 'activity.complete')])
      expect(s).toMatchObject({ attempt: 1, activityId: expect.any(String) });
    for (const s of [...starts, ...payloads(tape, 'activity.complete')]) {
      expect(s).not.toHaveProperty('workflowId');
      expect(s).not.toHaveProperty('runId');
    }
    const steps = tape.frames.filter((f) => f.kind === 'activity.start').map((f) => f.step);
    expect(steps).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // Within a step: start, request, chunks, response, complete.
    const step0 = tape.frames.filter((f) => f.step === 0 && f.kind !== 'blob').map((f) => f.kind);
    expect(step0[0]).toBe('activity.start');
    expect(step0[1]).toBe('llm.request');
    expect(step0.at(-2)).toBe('llm.response');
    expect(step0.at(-1)).toBe('activity.complete');

    const stored = payloads(tape, 'llm.chunk')[0]! as { chunks: unknown; text: unknown };
    // The batch's text is stored once, as a blob; each entry keeps its delta's length; a batch of 8 or more
    // entries is a blob of its own.
    expect(stored.text).toBeInstanceOf(BlobRef);
    const packed = (
      stored.chunks instanceof BlobRef ? derefValue(tape, stored.chunks) : stored.chunks
    ) as unknown[][];
    expect(stored.chunks instanceof BlobRef).toBe(packed.length >= ENTRIES_BLOB_MIN);
    expect(packed.every((c) => c[2] === null || typeof c[2] === 'number')).toBe(true);
    const chunkFrame = { chunks: chunkEntries(stored, tape.blobs) as Array<[number, number, string | null]> };
    expect(chunkFrame.chunks.length).toBeGreaterThan(4);
    expect(chunkFrame.chunks.map((c) => c[0])).toEqual(chunkFrame.chunks.map((_, i) => i));
    const offsets = chunkFrame.chunks.map((c) => c[1]);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(chunkFrame.chunks.map((c) => c[2] ?? '').join('')).toBe(
      'I will look up the distance to the Moon first.',
    );
    const response = payloads(tape, 'llm.response')[0]! as {
      usage: { inputTokens: number; outputTokens: number };
      cost: number;
    };
    expect(response).toMatchObject({ usage: { inputTokens: expect.any(Number) }, stopReason: 'tool_calls' });
    // Priced from the dated table: gpt-4o-mini at $0.15 / $0.60 per million input / output tokens.
    expect(response.usage.inputTokens).toBeGreaterThan(0);
    expect(response.cost).toBeCloseTo(
      (response.usage.inputTokens * 0.15 + response.usage.outputTokens * 0.6) / 1e6,
      12,
    );
    expect(payloads(tape, 'tool.call')[0]).toMatchObject({
      toolName: 'lookup_fact',
      args: { topic: 'moon distance km' },
    });
    expect(payloads(tape, 'outcome')[0]).toMatchObject({ status: 'completed' });

    // The question went out with the fake key in it, and the tape never stored it.
    expect(model.servedTurns().length).toBe(4);
    expect(readFileSync(file).toString('latin1')).not.toContain(FAKE_KEY);
    expect(readFileSync(file).toString('latin1')).not.toContain('FAKEKEY');
  });

  it('records a failed step and seals the tape with the failure as its outcome', async () => {
    model.loadScript({
      turns: [
        { id: 'bad-tool', reply: { toolCalls: [{ name: 'launch_rockets', arguments: { count: 3 } }] } },
      ],
    });
    const { file, result } = await run('researchAgent', { question: 'go' }, { maximumAttempts: 3 });
    expect(result).toBeInstanceOf(Error);
    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
    const tape = readTape(file);
    const error = payloads(tape, 'activity.error');
    expect(error).toHaveLength(1);
    expect(error[0]).toMatchObject({
      attempt: 1,
      willRetry: false,
      error: { name: 'ToolNotFoundError', nonRetryable: true },
    });
    expect(payloads(tape, 'tool.result')[0]).toMatchObject({
      isError: true,
      error: { code: 'TOOL_NOT_FOUND' },
    });
    const outcome = payloads(tape, 'outcome')[0]!;
    expect(outcome.status).toBe('failed');
    expect(JSON.stringify(outcome.error)).toContain('launch_rockets');
  });

  it('records each retry of a step as a new attempt of the same activity', async () => {
    model.loadScript({
      turns: [
        { id: 'flaky', reply: { status: 500, text: 'overloaded' } },
        { id: 'answer', reply: { text: 'Recovered.' } },
      ],
    });
    const { file } = await run('researchAgent', { question: 'go' }, { initialRetryIntervalMs: 50 });
    const tape = readTape(file);
    const starts = payloads(tape, 'activity.start').filter((s) => s.activityType === 'llmStep');
    expect(starts.map((s) => s.attempt)).toEqual([1, 2]);
    expect(new Set(starts.map((s) => s.activityId)).size).toBe(1);
    expect(payloads(tape, 'activity.error')).toEqual([
      expect.objectContaining({ attempt: 1, willRetry: true }),
    ]);
    expect(payloads(tape, 'activity.complete')[0]).toMatchObject({ attempt: 2 });
    expect(payloads(tape, 'llm.request')).toHaveLength(2);
    expect(payloads(tape, 'outcome')[0]).toMatchObject({ status: 'completed' });
  });

  it('writes the workflow random and clock readings before the step that followed them', async () => {
    const { file, result } = await run<{ first: number; at: number; second: number }>('observingAgent', {
      topic: 'moon distance km',
    });
    const output = (result as { output: { first: number; at: number; second: number } }).output;
    const tape = readTape(file);
    const order = tape.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(order).toEqual([
      'random',
      'clock',
      'activity.start',
      'tool.call',
      'tool.result',
      'activity.complete',
      'random',
      'outcome',
      'seal',
    ]);
    expect(payloads(tape, 'random').map((p) => p.values)).toEqual([[output.first], [output.second]]);
    expect(payloads(tape, 'clock')[0]).toMatchObject({ seq: 1, nowMs: output.at });
    expect(tape.frames.find((f) => f.kind === 'random')?.step).toBe(0);
  });

  it('writes no tape when the worker has recording switched off', async () => {
    const dir = tempDir();
    const off = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      workflowsPath: RECORDER_WORKFLOWS,
      tape: false,
    });
    // With recording off nothing may appear, not even in the default folder this test points at.
    process.env.JUKEBOX_TAPE_DIR = dir.dir;
    try {
      model.loadScript(SAMPLE_SCRIPT);
      const h = await startAgent<P, ResearchOutput>(
        'researchAgent',
        { question: QUESTION },
        {
          connection: off.connection,
          namespace: off.namespace,
          taskQueue: off.taskQueue,
        },
      );
      const result = await h.result();
      expect(result.output.turns).toBe(4);
      expect(existsSync(dir.dir) ? readdirSync(dir.dir) : []).toEqual([]);
    } finally {
      await off.close();
      delete process.env.JUKEBOX_TAPE_DIR;
      dir.cleanup();
    }
  });
});
