import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { researchAgent } from '../../../examples/sample/agent';
import { blake3, verifyTape } from '../../../src/recorder/tape';
import { toHex } from '../../../src/recorder/tape/hash';
import { forkRun } from '../../../src/temporal';
import { inheritedChain } from '../../../src/timetravel/fork';
import { readTimeline, replayTape } from '../../../src/timetravel/replay';
import { QUESTION, recordingSetup, SAMPLE_SCRIPT } from '../replay/recordedRun';

const hashOf = (file: string) => toHex(blake3(readFileSync(file)));

describe('a fork on Temporal: steps before the fork point from the parent tape, later ones live', () => {
  let setup: Awaited<ReturnType<typeof recordingSetup>>;
  let parent: string;

  beforeAll(async () => {
    setup = await recordingSetup();
    ({ tapeFile: parent } = await setup.record({ question: QUESTION }));
  });
  afterAll(async () => {
    await setup?.close();
  });

  const fork = (
    parentTape: string,
    atStep: number,
    overrides: Parameters<typeof forkRun>[0]['overrides'],
  ) => {
    setup.model.loadScript(SAMPLE_SCRIPT); // resets the request count
    return forkRun({
      parentTape,
      atStep,
      overrides,
      connection: setup.env.connection,
      namespace: setup.env.namespace,
      taskQueue: setup.env.taskQueue,
      tapeDir: setup.tapeDir,
    });
  };

  it('swaps the model from step 4: steps 0..3 never reach the model server, the tape links to its parent', async () => {
    const parentHash = hashOf(parent);
    const p = readTimeline(parent);
    const f = await fork(parent, 4, { model: 'gpt-4o' });
    expect(f.error).toBeUndefined();
    expect(f.result?.output).toEqual({ answer: expect.stringMatching(/384,400 km/), turns: 4 });
    // Steps 4 (llm), 5 (tool) and 6 (llm) ran live: two model requests, none for steps 0 and 2.
    expect(setup.model.requestCount()).toBe(2);
    expect(f.workflowId).toMatch(new RegExp(`^${p.tape.header.workflowId}\\.fork-4-`));

    expect(verifyTape(f.tapeFile)).toMatchObject({ ok: true, sealed: true });
    const t = readTimeline(f.tapeFile);
    expect(t.tape.header.parent).toEqual({
      tapeId: p.tape.header.tapeId,
      tapeHash: inheritedChain(p, 4),
      forkStep: 4,
    });
    expect(t.tape.header.meta).toMatchObject({ fork: { overrides: { model: 'gpt-4o' } } });
    // The fork's own tape holds every step, inherited ones included, with the same requests and responses.
    expect(t.steps.map((s) => s.kind)).toEqual(['llm', 'tool', 'llm', 'tool', 'llm', 'tool', 'llm']);
    expect(t.steps.map((s) => s.request?.model)).toEqual([
      'gpt-4o-mini',
      undefined,
      'gpt-4o-mini',
      undefined,
      'gpt-4o',
      undefined,
      'gpt-4o',
    ]);
    for (const i of [0, 1, 2, 3]) {
      expect(t.steps[i]!.response).toEqual(p.steps[i]!.response);
      expect(t.steps[i]!.output).toEqual(p.steps[i]!.output);
    }
    expect(t.steps[2]!.chunks).toEqual(p.steps[2]!.chunks);
    // The parent tape is never modified.
    expect(hashOf(parent)).toBe(parentHash);

    // A fork tape replays offline too: its overrides are in its header.
    const report = await replayTape(f.tapeFile, { agent: researchAgent as never });
    expect(report).toMatchObject({ status: 'match', replayed: 7 });
  });

  it('forks of forks work: the grandchild names the fork as its parent and inherits its live steps', async () => {
    const child = await fork(parent, 2, { model: 'gpt-4o' });
    expect(child.error).toBeUndefined();
    expect(setup.model.requestCount()).toBe(3); // steps 2, 4, 6
    const childHash = hashOf(child.tapeFile);
    const grandchild = await fork(child.tapeFile, 6, { system: 'Answer in one sentence.' });
    expect(grandchild.error).toBeUndefined();
    expect(setup.model.requestCount()).toBe(1); // only step 6
    const c = readTimeline(child.tapeFile);
    const g = readTimeline(grandchild.tapeFile);
    expect(g.tape.header.parent).toEqual({
      tapeId: c.tape.header.tapeId,
      tapeHash: inheritedChain(c, 6),
      forkStep: 6,
    });
    // Step 4 came from the child's live gpt-4o step; step 6 carries the new system prompt on the child's model.
    expect(g.steps[4]!.request?.model).toBe('gpt-4o');
    expect(g.steps[6]!.request).toMatchObject({ model: 'gpt-4o', system: 'Answer in one sentence.' });
    expect(hashOf(child.tapeFile)).toBe(childHash);
  });

  it('a step before the fork point whose request no longer matches the parent fails the fork, non-retryably', async () => {
    // Forking with an override can't make an inherited step differ, so change the parent's input instead:
    // a fork of a different question would ask step 0 something the tape never recorded.
    const { startFork } = await import('../../../src/temporal');
    const p = readTimeline(parent);
    const started = await startFork({
      parentTape: parent,
      atStep: 4,
      connection: setup.env.connection,
      namespace: setup.env.namespace,
      taskQueue: setup.env.taskQueue,
      runOptions: { maximumAttempts: 3, initialRetryIntervalMs: 50 },
    });
    expect(started.fork.parentTapeHash).toBe(inheritedChain(p, 4));
    // Re-run the same fork options with a different input through the client directly.
    const { Client } = await import('@temporalio/client');
    const client = new Client({ connection: setup.env.connection, namespace: setup.env.namespace });
    await started.handle.result();
    const handle = await client.workflow.start('researchAgent', {
      taskQueue: setup.env.taskQueue,
      workflowId: `${started.workflowId}-changed-input`,
      args: [
        { question: 'A different question about the Moon?' },
        { maximumAttempts: 3, fork: started.fork },
      ],
    });
    const err = (await handle.result().catch((e: unknown) => e)) as {
      cause?: { cause?: { message?: string; type?: string } };
    };
    expect(err.cause?.cause?.type).toBe('ForkDivergenceError');
    expect(err.cause?.cause?.message).toMatch(
      /step 0 comes before the fork point, but its request differs .*messages\[0\]\.content/,
    );
  });
});
