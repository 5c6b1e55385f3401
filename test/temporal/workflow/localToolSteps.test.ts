import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../../examples/sample/agent';
import { stepScript } from '../../../examples/sample/stepScript';
import { researchTools } from '../../../examples/sample/tools';
import type { ToolDefinition } from '../../../src/agent/tools';
import { localEndpoints } from '../../../src/llm';
import { RecorderTimings } from '../../../src/recorder';
import { readTape, type Tape, verifyTape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { tempDir } from '../../recorder/helpers';
import { connectTestWorker } from '../../support/temporal';

const STEPS = 3;
// The breaker watches these runs like any other; the scripted model answers faster than any real one.
const BREAKER = { velocity: { maxOutputTokensPerMinute: 1e9, maxUsdPerMinute: 1e9 } };

/** Fails its first call for each topic with a plain (retryable) error, then answers like lookup_fact. */
function flakyLookup(failures: Map<string, number>): ToolDefinition {
  const lookup = researchTools.find((t) => t.spec.name === 'lookup_fact')!;
  return {
    spec: lookup.spec,
    async run(args, invocation) {
      const topic = String(args.topic);
      const seen = failures.get(topic) ?? 0;
      failures.set(topic, seen + 1);
      if (seen === 0) throw new Error(`knowledge base busy for ${topic}`);
      return lookup.run(args, invocation);
    },
  };
}

type Event = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

function scheduledTypes(events: Event[]): string[] {
  return events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}

/** Local-activity markers of tool steps (the run's last task also records its outcome as a local activity). */
function toolStepMarkers(events: Event[]) {
  return events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    if (m?.markerName !== 'core_local_activity') return [];
    const data = (m.details?.data?.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString('utf8'));
    return data.some((d) => d.includes('"toolStep"')) ? [m] : [];
  });
}

function localMarkers(events: Event[]): number {
  return toolStepMarkers(events).length;
}

function payloads(tape: Tape, kind: string) {
  return tape.frames.filter((f) => f.kind === kind).map((f) => f.payload as Record<string, unknown>);
}

describe('tool steps as local activities', () => {
  let model: ModelServer;
  const tapes = tempDir('jbx-local-steps-');
  const timings = new RecorderTimings();
  const failures = new Map<string, number>();
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  let flakyEnv: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    model = await startModelServer({ script: stepScript(STEPS) });
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      tape: { dir: tapes.dir, timings },
    });
    flakyEnv = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: [flakyLookup(failures), ...researchTools.filter((t) => t.spec.name !== 'lookup_fact')],
      tape: { dir: tapes.dir },
    });
  });
  afterAll(async () => {
    await env?.close();
    await flakyEnv?.close();
    await model?.close();
    tapes.cleanup();
  });

  const run = async (
    on: typeof env,
    runOptions: Record<string, unknown>,
  ): Promise<{ result: { output: ResearchOutput; steps: unknown[] }; events: Event[]; tape: Tape }> => {
    model.loadScript(stepScript(STEPS));
    const handle = await startAgent<Record<string, unknown>, ResearchOutput>(
      'researchAgent',
      { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 },
      {
        connection: on.connection,
        namespace: on.namespace,
        taskQueue: on.taskQueue,
        runOptions: { breaker: BREAKER, initialRetryIntervalMs: 50, ...runOptions },
      },
    );
    const result = await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    const file = path.join(tapes.dir, `${handle.workflowId}--${(await handle.describe()).runId}.jbx`);
    expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true });
    return { result, events, tape: readTape(file) };
  };

  it('runs the listed tools inside the workflow task and records the same steps as activity tasks would', async () => {
    const remote = await run(env, {});
    timings.reset();
    const local = await run(env, { localTools: ['lookup_fact'] });

    expect(local.result).toEqual(remote.result);
    // No lookup_fact activity task went through the server; each lookup is a local-activity marker instead.
    expect(scheduledTypes(remote.events).filter((t) => t === 'toolStep')).toHaveLength(STEPS);
    expect(scheduledTypes(local.events).filter((t) => t === 'toolStep')).toHaveLength(0);
    expect(localMarkers(local.events)).toBe(STEPS);
    expect(localMarkers(remote.events)).toBe(0);

    // The tape holds the same steps, frame kind for frame kind, with the tool steps marked as toolStep runs.
    const shape = (t: Tape) => t.frames.filter((f) => f.kind !== 'blob').map((f) => `${f.step}:${f.kind}`);
    expect(shape(local.tape)).toEqual(shape(remote.tape));
    expect(payloads(local.tape, 'tool.result').map((p) => p.isError ?? false)).toEqual(
      Array(STEPS).fill(false),
    );
    // Each local step's closing frames waited for its workflow task's barrier instead of an fsync of its own
    // (one local step per task here, so one barrier each).
    expect(timings.barriers).toBe(STEPS);
    expect(timings.activities).toBe(2 * STEPS + 1);
  });

  it('makes the local steps of one workflow task durable with one fsync, before the task completes', async () => {
    // One model turn asks for two tools: both run as local activities in the same workflow task.
    const twoTools = {
      turns: [
        { id: 'answer', match: { toolResult: '2' }, reply: { text: 'Both are in.' }, repeat: true },
        {
          id: 'ask',
          reply: {
            toolCalls: [
              { name: 'lookup_fact', arguments: { topic: 'moon distance km' } },
              { name: 'calculate', arguments: { expression: '1+1' } },
            ],
          },
          repeat: true,
        },
      ],
    };
    model.loadScript(twoTools);
    timings.reset();
    const handle = await startAgent<Record<string, unknown>, ResearchOutput>(
      'researchAgent',
      { question: 'Two tools at once.', maxTurns: 3 },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: BREAKER, localTools: ['lookup_fact', 'calculate'] },
      },
    );
    const result = await handle.result();
    expect(result.output.answer).toBe('Both are in.');
    const events = (await handle.fetchHistory()).events ?? [];
    // Both markers went to the history in one workflow task completion...
    const markerTasks = new Set(toolStepMarkers(events).map((m) => String(m.workflowTaskCompletedEventId)));
    expect(localMarkers(events)).toBe(2);
    expect(markerTasks.size).toBe(1);
    // ...after one barrier fsync made both steps' frames durable: two llm steps fsync on their own, the two
    // local steps share the barrier's, and the seal fsyncs itself (not counted here).
    expect(timings.activities).toBe(4);
    expect(timings.barriers).toBe(1);
    expect(timings.syncs).toBe(3);
  });

  it('retries a failed local step in the worker, recording each attempt, with no failed task in the history', async () => {
    failures.clear();
    const { result, events, tape } = await run(flakyEnv, { localTools: ['lookup_fact'] });
    expect((result.output as ResearchOutput).answer).toBe(`Done after ${STEPS} lookups.`);
    expect([...failures.values()]).toEqual(Array(STEPS).fill(2));
    // A local activity's retries are the worker's: the history has one marker per step and no failure events.
    expect(localMarkers(events)).toBe(STEPS);
    expect(events.some((e) => e.activityTaskFailedEventAttributes)).toBe(false);
    // The tape has both attempts of every lookup: the error (marked for retry) and then the result.
    const errors = payloads(tape, 'activity.error');
    expect(errors).toHaveLength(STEPS);
    for (const e of errors) expect(e).toMatchObject({ attempt: 1, willRetry: true });
    const toolCompletions = payloads(tape, 'activity.complete').filter((p) => p.attempt === 2);
    expect(toolCompletions).toHaveLength(STEPS);
  });

  it('fails a local step at once on a non-retryable tool error, as an activity task would', async () => {
    model.loadScript({
      turns: [{ id: 'bad-args', reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: '' } }] } }],
    });
    const handle = await startAgent<Record<string, unknown>, ResearchOutput>(
      'researchAgent',
      { question: 'Look up nothing.', maxTurns: 2 },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { breaker: BREAKER, localTools: ['lookup_fact'], maximumAttempts: 5 },
      },
    );
    const err = await handle.result().catch((e: unknown) => e);
    // The failure chain carries the tool's typed error with its retry semantics, wherever it sits in it.
    const chain: unknown[] = [];
    for (let e = err as { cause?: unknown } | undefined; e; e = e.cause as { cause?: unknown } | undefined)
      chain.push(e);
    expect(chain).toContainEqual(expect.objectContaining({ type: 'ToolArgumentsError', nonRetryable: true }));
    const events = (await handle.fetchHistory()).events ?? [];
    // One attempt only: the failure marker, no retry backoff timers.
    expect(localMarkers(events)).toBe(1);
    expect(events.some((e) => e.timerStartedEventAttributes)).toBe(false);
  });
});
