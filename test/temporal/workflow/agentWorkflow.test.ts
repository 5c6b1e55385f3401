import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../../examples/sample/agent';
import { researchTools } from '../../../examples/sample/tools';
import { localEndpoints } from '../../../src/llm';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { connectTestWorker } from '../../support/temporal';

const SAMPLE_SCRIPT = path.join(__dirname, '../../../examples/sample/script.yaml');
const QUESTION = 'How many times around the Earth is the distance to the Moon?';

describe('agents run as Temporal workflows', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    model = await startModelServer({ script: SAMPLE_SCRIPT });
    env = await connectTestWorker({ endpoints: localEndpoints(model.url), tools: researchTools });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  const run = (input: Record<string, unknown>, runOptions = {}) =>
    (async () => {
      const handle = await startAgent<Record<string, unknown>, ResearchOutput>('researchAgent', input, {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions,
      });
      return { handle, result: await handle.result() };
    })();

  it.each(['openai', 'anthropic'] as const)(
    'runs the sample agent through %s tool calls to an answer',
    async (provider) => {
      model.loadScript(SAMPLE_SCRIPT);
      // Each provider's own model: the breaker prices every step and refuses a model it has no price for.
      const modelName = provider === 'openai' ? 'gpt-4o-mini' : 'claude-haiku-4-5';
      const { result } = await run({ question: QUESTION, provider, model: modelName });
      expect(result.output).toEqual({
        answer:
          "The Moon is about 384,400 km away: roughly 9.6 trips around the Earth's equator (40,075 km).",
        turns: 4,
      });
      expect(result.steps.map((s) => `${s.kind}:${s.kind === 'tool' ? s.name : ''}`)).toEqual([
        'llm:',
        'tool:lookup_fact',
        'llm:',
        'tool:lookup_fact',
        'llm:',
        'tool:calculate',
        'llm:',
      ]);
      expect(result.steps[5]?.detail).toContain('9.59');
      expect(model.requestCount()).toBe(4);
      expect(new Set(model.servedTurns().map((t) => t.provider))).toEqual(new Set([provider]));
      expect(model.servedTurns().every((t) => t.streamed)).toBe(true);
    },
  );

  it('fails the run at once, without retries, when the model calls a tool the worker does not have', async () => {
    model.loadScript({
      turns: [
        { id: 'bad-tool', reply: { toolCalls: [{ name: 'launch_rockets', arguments: { count: 3 } }] } },
      ],
    });
    const err = await run({ question: QUESTION }, { maximumAttempts: 5 }).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (err as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    const cause = (activityFailure as ActivityFailure).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause.type).toBe('ToolNotFoundError');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toContain('launch_rockets');
    expect(cause.message).toContain('lookup_fact');
  });

  it('retries a step whose model call failed with a 500 and completes', async () => {
    model.loadScript({
      turns: [
        { id: 'flaky', reply: { status: 500, text: 'overloaded' } },
        { id: 'answer', reply: { text: 'Recovered.' } },
      ],
    });
    const { result, handle } = await run({ question: QUESTION }, { initialRetryIntervalMs: 50 });
    expect(result.output.answer).toBe('Recovered.');
    expect(model.servedTurns().map((t) => t.turnId)).toEqual(['flaky', 'answer']);
    const history = await handle.fetchHistory();
    const started = history.events?.find(
      (e) => e.activityTaskStartedEventAttributes,
    )?.activityTaskStartedEventAttributes;
    expect(started?.attempt).toBe(2);
  });

  it('fails the run without retries when the model script has no turn for a request, quoting the server', async () => {
    model.loadScript({
      name: 'narrow',
      turns: [{ id: 'only-paris', match: { lastUser: 'Paris' }, reply: { text: 'x' } }],
    });
    const err = await run({ question: QUESTION }, { maximumAttempts: 5 }).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = ((err as WorkflowFailedError).cause as ActivityFailure).cause as ApplicationFailure;
    expect(cause.type).toBe('LlmCallError');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toMatch(/HTTP 400/);
    expect(cause.message).toContain('only-paris');
    expect(model.requestCount()).toBe(1);
  });
});
