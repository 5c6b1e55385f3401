import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import type { ToolDefinition } from '../../src/agent/tools';
import type { BreakerTrip } from '../../src/breaker/trip';
import { localEndpoints } from '../../src/llm';
import { readTape } from '../../src/recorder/tape';
import { bundleAgentWorkflows, createJukeboxWorker, startAgentGroup } from '../../src/temporal';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { EXAMPLE_WORKFLOWS_PATH } from '../support/temporal';

const STUCK = 'I cannot open the notes file from here; please attach it so I can continue.';

const writeNote: ToolDefinition = {
  spec: { name: 'write_note', parameters: { type: 'object', properties: { text: { type: 'string' } } } },
  async run(args, { booth }) {
    if (!booth) throw new Error('write_note needs the Shadow Booth');
    await booth.files.writeFile('notes.md', String(args.text));
    return { staged: 'notes.md' };
  },
};

describe('a repetition trip ends the group run rolled back', () => {
  let model: ModelServer;
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `test-breaker-${Date.now().toString(36)}`;
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'jukebox-breaker-ws-'));
  const staging = mkdtempSync(path.join(os.tmpdir(), 'jukebox-breaker-staging-'));
  const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-breaker-tapes-'));

  beforeAll(async () => {
    model = await startModelServer({
      script: {
        turns: [
          { id: 'plan', reply: { text: 'Please write the release note for the team.' } },
          { id: 'write', reply: { toolCalls: [{ name: 'write_note', arguments: { text: 'draft 1' } }] } },
          { id: 'stuck-1', reply: { text: STUCK } },
          { id: 'nudge', reply: { text: 'The notes file is attached, go on with the note.' } },
          { id: 'stuck-2', reply: { text: STUCK } },
          { id: 'never', reply: { text: 'unreachable' } },
        ],
      },
    });
    const config = temporalConfigFromEnv();
    env = await TestWorkflowEnvironment.createFromExistingServer({
      address: config.address,
      namespace: config.namespace,
    });
    worker = await createJukeboxWorker({
      connection: env.nativeConnection,
      namespace: config.namespace,
      taskQueue,
      endpoints: localEndpoints(model.url),
      tools: [writeNote],
      workflowBundle: await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH),
      tape: { dir: tapeDir },
      booth: { workspaceRoot: workspace, stagingRoot: staging },
    });
    running = worker.run();
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
    await model?.close();
  });

  it('trips on the word-for-word repeat, discards the staged write and records trip and rollback', async () => {
    const handle = await startAgentGroup(
      {
        tracks: [
          { name: 'planner', provider: 'openai', model: 'gpt-4o-mini' },
          { name: 'worker', provider: 'openai', model: 'gpt-4o-mini' },
        ],
        opening: 'Get the release note written.',
        maxTurns: 10,
        breaker: { capUsd: 0.5 },
      },
      { connection: env.connection, namespace: temporalConfigFromEnv().namespace, taskQueue },
    );
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const failure = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('BreakerTrippedError');
    expect(failure.nonRetryable).toBe(true);
    const trip = (failure.details![0] as { trip: BreakerTrip }).trip;
    expect(trip).toMatchObject({ detector: 'exact-repeat', track: 'worker' });
    expect((trip.evidence as { matches: { excerpt: string }[] }).matches[0]!.excerpt).toBe(STUCK);
    // Five model turns served, the sixth never asked for: the trip stopped the run at the repeat.
    expect(model.servedTurns().map((t) => t.turnId)).toEqual([
      'plan',
      'write',
      'stuck-1',
      'nudge',
      'stuck-2',
    ]);

    // The staged write never reached the workspace, and its staging area is gone.
    expect(existsSync(path.join(workspace, 'notes.md'))).toBe(false);
    const runId = (await handle.describe()).runId;
    const tape = readTape(path.join(tapeDir, `${handle.workflowId}--${runId}.jbx`));
    const kinds = tape.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds).toContain('fs.mutation');
    const tripFrame = tape.frames.find((f) => f.kind === 'breaker.trip')!.payload as Record<string, unknown>;
    expect(tripFrame).toMatchObject({ detector: 'exact-repeat', track: 'worker' });
    const rollback = tape.frames.find((f) => f.kind === 'rollback')!.payload as { reason: string };
    expect(rollback.reason).toContain('Circuit breaker tripped on track "worker"');
    expect(kinds.indexOf('breaker.trip')).toBeLessThan(kinds.indexOf('rollback'));
    expect(readdirSync(staging).flatMap((d) => readdirSync(path.join(staging, d)))).toEqual([]);
  });
});
