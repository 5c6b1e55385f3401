/**
 * Steps of any duration on the real dev server with the default run options (heartbeat timeout 30 s, 5 attempts):
 * a step that is quiet for minutes is alive, not dead. These tests wait for real minutes by nature; they are
 * independent and run concurrently, so the file costs about as long as its longest test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../src/agent/tools';
import { localEndpoints } from '../../../src/llm';
import type { LlmRequest } from '../../../src/llm/types';
import { readTape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { DEFAULT_RUN_OPTIONS } from '../../../src/temporal/workflow/runOptions';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { waitUntil } from '../../support/history';
import { processesWith, uniqueSleep } from '../../support/processes';
import { connectTestWorker } from '../../support/temporal';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';
import { longStepTools, wait } from './fixtures/longStepTools';
import type { ToolCallsInput } from './fixtures/longStepWorkflows';

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

const WORKFLOWS = path.join(__dirname, 'fixtures/longStepWorkflows.ts');
const WORKER_ENTRY = 'test/temporal/workflow/fixtures/longStepWorker.ts';
const MINUTE = 60_000;
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-long-steps-'));

/** A Shadow Booth's folders for one test: the real workspace, the staging area, the tapes. */
function boothDir(name: string) {
  const dir = path.join(base, name);
  for (const d of ['workspace', 'staging', 'tapes']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  fs.writeFileSync(path.join(dir, 'workspace', 'README.md'), 'the real workspace\n');
  return {
    dir,
    workspace: path.join(dir, 'workspace'),
    staging: path.join(dir, 'staging'),
    tapes: path.join(dir, 'tapes'),
  };
}

/** A tool that sleeps for `ms` and counts how often its body ran. */
function sleepingTool(runs: Map<string, number>): ToolDefinition {
  return {
    spec: { name: 'sleep', description: 'sleeps', parameters: { type: 'object', properties: {} } },
    async run(args, { signal }) {
      const id = String(args.id);
      runs.set(id, (runs.get(id) ?? 0) + 1);
      await wait(Number(args.ms), signal);
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
  let boothEnv: Awaited<ReturnType<typeof connectTestWorker>>;
  const booth = boothDir('in-process');
  const runs = new Map<string, number>();
  const workers: WorkerProcess[] = [];

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
    boothEnv = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      workflowsPath: WORKFLOWS,
      tools: longStepTools(),
      booth: { workspaceRoot: booth.workspace, stagingRoot: booth.staging },
      tape: { dir: booth.tapes },
    });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await env?.close();
    await boothEnv?.close();
    await model?.close();
    fs.rmSync(base, { recursive: true, force: true });
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

  it('a worker SIGKILLed during a long tool is found dead by the heartbeat timeout; the step runs again on another worker and stages once', {
    timeout: 8 * MINUTE,
  }, async () => {
    const world = boothDir('killed-worker');
    const attemptsFile = path.join(world.dir, 'attempts.log');
    const workerEnv = {
      JUKEBOX_TASK_QUEUE: `long-kill-${Date.now().toString(36)}`,
      JUKEBOX_BOOTH_DIR: world.dir,
      JUKEBOX_ATTEMPTS_FILE: attemptsFile,
      JUKEBOX_BUNDLE_FILE: path.join(base, 'long-step-workflows.bundle.js'),
    };
    const attempts = () =>
      (fs.existsSync(attemptsFile) ? fs.readFileSync(attemptsFile, 'utf8').trim().split('\n') : [])
        .filter(Boolean)
        .map((line) => ({ pid: Number(line.split(' ')[0]), at: Number(line.split(' ')[1]) }));
    const first = await spawnWorker(workerEnv, 2 * MINUTE, WORKER_ENTRY);
    workers.push(first);
    const handle = await startAgent<ToolCallsInput, unknown[]>(
      'toolCallsAgent',
      { calls: [{ tool: 'stage_then_wait', args: { id: 'the step', ms: 45_000 } }], commit: true },
      { connection: env.connection, namespace: env.namespace, taskQueue: workerEnv.JUKEBOX_TASK_QUEUE },
    );
    // Killed once the step has staged its line and is waiting, its heartbeats going out on the timer.
    await waitUntil('the first attempt staged', () => attempts().length === 1, 2 * MINUTE);
    await new Promise((r) => setTimeout(r, 3_000));
    const killedAt = Date.now();
    await first.kill('SIGKILL');
    const second = await spawnWorker(workerEnv, 2 * MINUTE, WORKER_ENTRY);
    workers.push(second);

    expect((await handle.result()).output).toEqual(['staged, then waited']);
    const [before, after] = attempts();
    expect(attempts()).toHaveLength(2);
    expect(before?.pid).toBe(first.child.pid);
    expect(after?.pid).toBe(second.child.pid);
    // The server gave up on the dead worker's attempt for its heartbeats, not at the 5-minute start-to-close.
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = new Map(
      events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [[String(e.eventId), e]] : [])),
    );
    const toolStarted = events.flatMap((e) => {
      const s = e.activityTaskStartedEventAttributes;
      const type =
        s && scheduled.get(String(s.scheduledEventId))?.activityTaskScheduledEventAttributes?.activityType;
      return type?.name === 'toolStep' ? [s] : [];
    });
    expect(toolStarted.map((s) => s?.attempt)).toEqual([2]);
    expect(toolStarted[0]?.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(
      temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
    );
    expect(after!.at - killedAt).toBeLessThan(DEFAULT_RUN_OPTIONS.stepTimeoutMs);
    process.stderr.write(`[long steps] SIGKILL to the retried attempt's start: ${after!.at - killedAt} ms\n`);
    // The dead attempt's staging was thrown away: the commit holds the step's line once.
    expect(fs.readFileSync(path.join(world.workspace, 'steps.log'), 'utf8')).toBe('staged by the step\n');
    expect(fs.readdirSync(world.staging)).toEqual([]);
  });

  it('cancelling a run during a long shell command kills the command, then rolls back what the run staged', {
    timeout: 5 * MINUTE,
  }, async () => {
    const marker = uniqueSleep();
    const handle = await startAgent<ToolCallsInput, unknown[]>(
      'toolCallsAgent',
      { calls: [{ tool: 'stage_then_shell', args: { command: `sleep ${marker}` } }], commit: true },
      { connection: boothEnv.connection, namespace: boothEnv.namespace, taskQueue: boothEnv.taskQueue },
    );
    await waitUntil('the command runs', () => processesWith(marker).length > 0, 2 * MINUTE);
    await new Promise((r) => setTimeout(r, 2_000));
    await handle.cancel();
    const err = (await handle.result().catch((e: Error) => e)) as Error;
    expect(err.cause).toBeInstanceOf(CancelledFailure);
    // The run ended only once the command was gone (it waits for a cancelled tool to stop).
    expect(processesWith(marker)).toEqual([]);
    expect(fs.readdirSync(booth.workspace)).toEqual(['README.md']);
    expect(fs.readdirSync(booth.staging)).toEqual([]);

    const events = (await handle.fetchHistory()).events ?? [];
    const cancelled = events.findIndex((e) => e.activityTaskCanceledEventAttributes);
    const rollback = events.findIndex(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'boothRollback',
    );
    expect(cancelled).toBeGreaterThan(-1);
    expect(rollback).toBeGreaterThan(cancelled);

    const { runId } = await handle.describe();
    const tape = readTape(path.join(booth.tapes, `${handle.workflowId}--${runId}.jbx`));
    // The step ended cancelled, not retried; then the rollback and the outcome.
    expect(tape.frames.find((f) => f.kind === 'activity.error')?.payload).toMatchObject({
      willRetry: false,
      error: { name: 'CancelledFailure' },
    });
    expect(tape.frames.some((f) => f.kind === 'rollback')).toBe(true);
    expect(tape.frames.find((f) => f.kind === 'outcome')?.payload).toMatchObject({ status: 'cancelled' });
  });
});
