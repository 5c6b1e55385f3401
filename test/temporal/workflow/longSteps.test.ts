/**
 * Steps of any duration on the real dev server with the default run options (heartbeat timeout 30 s, 5 attempts):
 * a step that is quiet for minutes is alive, not dead. These tests wait for real minutes by nature; they are
 * independent and run concurrently, so the file costs about as long as its longest test.
 */
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../src/agent/tools';
import { localEndpoints } from '../../../src/llm';
import type { LlmRequest } from '../../../src/llm/types';
import { startAgent } from '../../../src/temporal';
import { DEFAULT_RUN_OPTIONS } from '../../../src/temporal/workflow/runOptions';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { connectTestWorker } from '../../support/temporal';
import type { ToolCallsInput } from './fixtures/longStepWorkflows';

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

const WORKFLOWS = path.join(__dirname, 'fixtures/longStepWorkflows.ts');
const MINUTE = 60_000;

/** A tool that sleeps for `ms` and counts how often its body ran. */
function sleepingTool(runs: Map<string, number>): ToolDefinition {
  return {
    spec: { name: 'sleep', description: 'sleeps', parameters: { type: 'object', properties: {} } },
    async run(args, { signal }) {
      const id = String(args.id);
      runs.set(id, (runs.get(id) ?? 0) + 1);
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, Number(args.ms));
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
      return `slept ${args.ms} ms`;
    },
  };
}

function eventTypes(events: HistoryEvent[]): string[] {
  return events.map((e) => String(e.eventType));
}

describe.concurrent('steps of any duration, default run options', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  const runs = new Map<string, number>();

  beforeAll(async () => {
    expect(DEFAULT_RUN_OPTIONS).toMatchObject({ heartbeatTimeoutMs: 30_000, maximumAttempts: 5 });
    // A reasoning model: a minute and a half of silence on an open stream before its first token.
    model = await startModelServer({
      script: {
        turns: [{ reply: { text: 'Thought it over.', firstChunkDelayMs: 90_000, chunkDelayMs: 5 } }],
      },
    });
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      workflowsPath: WORKFLOWS,
      tools: [sleepingTool(runs)],
    });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  const runTools = (input: ToolCallsInput) =>
    startAgent<ToolCallsInput, unknown[]>('toolCallsAgent', input, {
      connection: env.connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
    });

  it('a two-minute tool completes with one run of its body, its history no longer than a short one', {
    timeout: 5 * MINUTE,
  }, async () => {
    const long = await runTools({ calls: [{ tool: 'sleep', args: { id: 'two-minutes', ms: 2 * MINUTE } }] });
    const short = await runTools({ calls: [{ tool: 'sleep', args: { id: 'short', ms: 10 } }] });
    // Half way through, the step is alive on its first attempt and its heartbeats carry nothing.
    await new Promise((r) => setTimeout(r, MINUTE));
    const pending = (await long.describe()).raw.pendingActivities ?? [];
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ attempt: 1 });
    expect(pending[0]!.lastHeartbeatTime).toBeTruthy();
    const details = pending[0]!.heartbeatDetails?.payloads ?? [];
    expect(details.reduce((n, p) => n + (p.data?.length ?? 0), 0)).toBe(0);

    expect((await long.result()).output).toEqual([`slept ${2 * MINUTE} ms`]);
    expect(runs.get('two-minutes')).toBe(1);
    const longEvents = (await long.fetchHistory()).events ?? [];
    const started = longEvents.flatMap((e) => e.activityTaskStartedEventAttributes ?? []);
    expect(started.map((s) => s.attempt)).toEqual([1]);
    // Heartbeats are no events: the two-minute run's history is the short run's, event for event.
    await short.result();
    expect(eventTypes(longEvents)).toEqual(eventTypes((await short.fetchHistory()).events ?? []));
  });

  it('a model that thinks for 90 s before its first chunk answers, asked exactly once', {
    timeout: 5 * MINUTE,
  }, async () => {
    const handle = await startAgent<LlmRequest, string>(
      'oneModelCallAgent',
      {
        provider: 'openai',
        model: 'jukebox-scripted',
        messages: [{ role: 'user', content: 'Think it over.' }],
      },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
    );
    expect((await handle.result()).output).toBe('Thought it over.');
    expect(model.requestCount()).toBe(1);
    const events = (await handle.fetchHistory()).events ?? [];
    const llmAttempts = events
      .flatMap((e) => e.activityTaskStartedEventAttributes ?? [])
      .map((s) => s.attempt);
    expect(llmAttempts).toEqual([1]);
  });
});
