/**
 * A tool's own timeout and retry policy, from its definition and from ctx.tool's options, on the real dev server:
 * the workflow schedules each tool step with them, a timeout is final unless the policy says otherwise (for
 * local steps too), and the tool is told to stop when its attempt is over.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { type ApplicationFailure, type TimeoutFailure, TimeoutType } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIMEOUT_IS_FINAL, type ToolDefinition } from '../../../src/agent/tools';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { waitUntil } from '../../support/history';
import { connectTestWorker } from '../../support/temporal';
import type { ToolCallsInput } from './fixtures/longStepWorkflows';

const WORKFLOWS = path.join(__dirname, 'fixtures/longStepWorkflows.ts');
const spec = (name: string) => ({ name, description: name, parameters: { type: 'object', properties: {} } });

const runs = new Map<string, number>();
const stopped = new Map<string, string>();
const count = (id: string) => runs.set(id, (runs.get(id) ?? 0) + 1);

const tools: ToolDefinition[] = [
  {
    spec: spec('slow'),
    timeoutMs: 1_500,
    async run(args, { signal }) {
      const id = String(args.id);
      count(id);
      signal.addEventListener('abort', () => stopped.set(id, String(signal.reason)));
      // Ignores its signal on purpose: a slow tool that keeps going must still not be run twice.
      await new Promise((r) => setTimeout(r, Number(args.ms)));
      return `slept ${args.ms} ms`;
    },
  },
  {
    spec: spec('flaky'),
    retry: { maximumAttempts: 1, initialIntervalMs: 50 },
    async run(args) {
      count(String(args.id));
      throw new Error('the service is busy');
    },
  },
];

async function failureOf(handle: WorkflowHandle): Promise<Error> {
  const err: Error = await handle.result().then(
    () => new Error('the run was expected to fail'),
    (e: Error) => e,
  );
  return (err.cause as Error | undefined)?.cause as Error;
}

async function scheduledToolSteps(handle: WorkflowHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.flatMap((e) => {
    const s = e.activityTaskScheduledEventAttributes;
    return s?.activityType?.name === 'toolStep' ? [s] : [];
  });
}

const seconds = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(d?.seconds ?? 0) + (d?.nanos ?? 0) / 1e9;

describe.concurrent("a tool's own timeout and retry policy", () => {
  let env: Awaited<ReturnType<typeof connectTestWorker>>;
  const tapes = mkdtempSync(path.join(os.tmpdir(), 'jbx-tool-policies-'));
  beforeAll(async () => {
    env = await connectTestWorker({
      endpoints: localEndpoints('http://127.0.0.1:9'),
      workflowsPath: WORKFLOWS,
      tools,
      tape: { dir: tapes },
    });
  });
  afterAll(async () => {
    await env?.close();
    rmSync(tapes, { recursive: true, force: true });
  });

  const run = (calls: ToolCallsInput['calls']) =>
    startAgent<ToolCallsInput, unknown[]>(
      'toolCallsAgent',
      { calls },
      {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
      },
    );

  it("runs past its definition's timeout: the step fails on its first attempt and the tool is told to stop", async () => {
    const handle = await run([{ tool: 'slow', args: { id: 'past-timeout', ms: 20_000 } }]);
    const failure = (await failureOf(handle)) as TimeoutFailure;
    expect(failure.name).toBe('TimeoutFailure');
    expect(failure.timeoutType).toBe(TimeoutType.START_TO_CLOSE);
    const [scheduled] = await scheduledToolSteps(handle);
    expect(seconds(scheduled?.startToCloseTimeout)).toBe(1.5);
    expect(scheduled?.retryPolicy).toMatchObject({
      maximumAttempts: 5,
      nonRetryableErrorTypes: [TIMEOUT_IS_FINAL],
    });
    await waitUntil('the tool was told to stop', () => stopped.has('past-timeout'), 60_000);
    expect(stopped.get('past-timeout')).toContain('CancelledFailure');
    expect(runs.get('past-timeout')).toBe(1);
  });

  it('runs again after a timeout only when the call asks for it (retry.retryTimeouts)', async () => {
    const handle = await run([
      {
        tool: 'slow',
        args: { id: 'retried-timeout', ms: 20_000 },
        options: { retry: { retryTimeouts: true, maximumAttempts: 2, initialIntervalMs: 50 } },
      },
    ]);
    expect(((await failureOf(handle)) as TimeoutFailure).timeoutType).toBe(TimeoutType.START_TO_CLOSE);
    expect(runs.get('retried-timeout')).toBe(2);
    const [scheduled] = await scheduledToolSteps(handle);
    expect(scheduled?.retryPolicy?.nonRetryableErrorTypes ?? []).toEqual([]);
  });

  it("takes the call's timeout over the definition's", async () => {
    const handle = await run([
      { tool: 'slow', args: { id: 'longer-timeout', ms: 2_500 }, options: { timeoutMs: 30_000 } },
    ]);
    expect((await handle.result()).output).toEqual(['slept 2500 ms']);
    expect(runs.get('longer-timeout')).toBe(1);
    const [scheduled] = await scheduledToolSteps(handle);
    expect(seconds(scheduled?.startToCloseTimeout)).toBe(30);
  });

  it("runs a failing tool as often as its definition says, or as a call's options override", async () => {
    const once = await run([{ tool: 'flaky', args: { id: 'flaky-once' } }]);
    expect((await failureOf(once)).message).toBe('the service is busy');
    expect(runs.get('flaky-once')).toBe(1);
    const thrice = await run([
      { tool: 'flaky', args: { id: 'flaky-thrice' }, options: { retry: { maximumAttempts: 3 } } },
    ]);
    expect((await failureOf(thrice)).message).toBe('the service is busy');
    expect(runs.get('flaky-thrice')).toBe(3);
    const [scheduled] = await scheduledToolSteps(thrice);
    // The call's attempts, the definition's interval.
    expect(scheduled?.retryPolicy).toMatchObject({ maximumAttempts: 3 });
    expect(seconds(scheduled?.retryPolicy?.initialInterval)).toBe(0.05);
    // Each attempt is on the tape: its call, then its error and whether the step was to be retried.
    const tape = readTape(path.join(tapes, tapeFileName(thrice.workflowId, (await thrice.describe()).runId)));
    const attempts = tape.frames
      .filter((f) => f.kind === 'tool.call' || f.kind === 'activity.error')
      .map((f) => {
        const p = f.payload as { attempt: number; willRetry?: boolean };
        return f.kind === 'tool.call' ? `call ${p.attempt}` : `error ${p.attempt} willRetry=${p.willRetry}`;
      });
    expect(attempts).toEqual([
      'call 1',
      'error 1 willRetry=true',
      'call 2',
      'error 2 willRetry=true',
      'call 3',
      'error 3 willRetry=false',
    ]);
  });

  it('keeps a local step that timed out from running again, as the server does an activity task', async () => {
    const handle = await run([
      { tool: 'slow', args: { id: 'local-timeout', ms: 20_000 }, options: { local: true } },
    ]);
    const failure = (await handle.result().catch((e: Error) => e)) as Error;
    const cause = (failure.cause as Error & { cause?: Error }).cause ?? (failure.cause as Error);
    expect((cause as ApplicationFailure).type).toBe('StepTimedOutError');
    expect(cause.message).toContain('ran past its timeout of 1500 ms and is not run again');
    expect(runs.get('local-timeout')).toBe(1);
  });

  it('fails the run with a typed error when ctx.tool is given a policy it cannot apply, before the tool runs', async () => {
    const handle = await run([
      { tool: 'slow', args: { id: 'bad-options', ms: 1 }, options: { timeoutMs: -5 } },
    ]);
    const failure = (await handle.result().catch((e: Error) => e)) as Error;
    expect((failure.cause as ApplicationFailure).type).toBe('ToolPolicyError');
    expect((failure.cause as Error).message).toContain(
      'ctx.tool("slow"): timeoutMs must be a number of milliseconds >= 1',
    );
    expect(runs.get('bad-options')).toBeUndefined();
  });
});
