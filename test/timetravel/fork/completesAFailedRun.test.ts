import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blake3 } from '../../../src/recorder/tape';
import { toHex } from '../../../src/recorder/tape/hash';
import type { ModelScript } from '../../../src/testing/modelserver';
import { diffTimelines } from '../../../src/timetravel/diff';
import { readTimeline } from '../../../src/timetravel/replay';
import { runJbx } from '../replay/jbx';
import { QUESTION, recordingSetup } from '../replay/recordedRun';

const FIXED = `${QUESTION} Write arithmetic with digits only.`;

/** The model writes the division in words unless the user asked for digits: the calculate tool then fails. */
const FLAKY_PROMPT_SCRIPT: ModelScript = {
  name: 'words-or-digits',
  turns: [
    {
      id: 'divide-digits',
      match: { toolResult: '40075', lastUser: 'digits only' },
      reply: { toolCalls: [{ name: 'calculate', arguments: { expression: '384400 / 40075' } }] },
      repeat: true,
    },
    {
      id: 'divide-words',
      match: { toolResult: '40075' },
      reply: { toolCalls: [{ name: 'calculate', arguments: { expression: '384400 / forty thousand' } }] },
      repeat: true,
    },
    {
      id: 'look-up-earth',
      match: { toolResult: '384400' },
      reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'earth circumference km' } }] },
      repeat: true,
    },
    {
      id: 'answer',
      match: { toolResult: '9.59' },
      reply: { text: 'About 9.6 times around the Earth.' },
      repeat: true,
    },
    {
      id: 'look-up-moon',
      reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'moon distance km' } }] },
      repeat: true,
    },
  ],
};

const hashOf = (file: string) => toHex(blake3(readFileSync(file)));

describe('resuming a failed run by forking it', () => {
  let setup: Awaited<ReturnType<typeof recordingSetup>>;
  let failed: string;
  const jbx = (args: string[]) =>
    runJbx(args, {
      env: { JUKEBOX_TAPE_DIR: setup.tapeDir, JUKEBOX_TEMPORAL_NAMESPACE: setup.env.namespace },
    });

  beforeAll(async () => {
    setup = await recordingSetup(FLAKY_PROMPT_SCRIPT);
    ({ tapeFile: failed } = await setup.record({ question: QUESTION }));
  });
  afterAll(async () => {
    await setup?.close();
  });

  it('a run that fails at step 5 is forked at step 4 with a fixed prompt and completes (jbx fork)', async () => {
    const parent = readTimeline(failed);
    expect(parent.outcome?.status).toBe('failed');
    expect(parent.steps).toHaveLength(6);
    expect(parent.steps[5]!.error?.message).toMatch(/cannot evaluate "384400 \/ forty thousand"/);
    const before = hashOf(failed);

    setup.model.loadScript(FLAKY_PROMPT_SCRIPT);
    const r = await jbx([
      'fork',
      failed,
      '--at',
      '4',
      '--set',
      `messages.0.content=${FIXED}`,
      '--task-queue',
      setup.env.taskQueue,
      '--json',
    ]);
    expect(r.stderr).not.toMatch(/warning/);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      status: 'completed',
      output: { answer: 'About 9.6 times around the Earth.', turns: 4 },
    });
    expect(out.workflowId).toMatch(new RegExp(`^${parent.tape.header.workflowId}\\.fork-4-`));
    // Only steps 4 and 6 asked the model; 0 and 2 came from the failed run's tape.
    expect(setup.model.requestCount()).toBe(2);

    const fork = readTimeline(out.tape);
    expect(fork.outcome?.status).toBe('completed');
    expect(fork.tape.header.parent?.forkStep).toBe(4);
    expect(fork.steps[5]!.output).toBe(String(384400 / 40075));
    expect((fork.steps[4]!.request!.messages[0] as { content: string }).content).toBe(FIXED);
    expect((fork.steps[2]!.request!.messages[0] as { content: string }).content).toBe(QUESTION);
    expect(hashOf(failed)).toBe(before);

    // The diff names the rewritten question, though the step's last message (the 40075 result) is unchanged.
    const d = diffTimelines(parent, fork);
    expect(d.firstDivergence).toBe(4);
    expect(d.rows[4]!.differences.find((x) => x.field === 'messages')).toMatchObject({
      a: expect.stringMatching(/^messages\[0\]\.content: …/),
      b: expect.stringMatching(/Write arithmetic with digits only\.$/),
    });
  });

  it('refuses bad forks with a clear message and a non-zero exit, leaving the parent tape untouched', async () => {
    const before = hashOf(failed);
    const parent = readTimeline(failed);
    const past = await jbx(['fork', failed, '--at', '99']);
    expect(past.code).toBe(2);
    expect(past.stderr).toMatch(/has 6 steps \(0\.\.5\); step 99 is past its end/);

    const inside = parent.steps[2]!.requestFrame;
    const frame = await jbx(['fork', failed, '--at-frame', String(inside)]);
    expect(frame.code).toBe(2);
    expect(frame.stderr).toMatch(
      new RegExp(
        `frame ${inside} \\(llm\\.request\\) is inside step 2, which starts at frame ${parent.steps[2]!.firstFrame}`,
      ),
    );
    const boundary = await jbx(['fork', failed, '--at-frame', String(parent.tape.frames.length + 5)]);
    expect(boundary.code).toBe(2);
    expect(boundary.stderr).toMatch(/past the end/);

    const model = await jbx(['fork', failed, '--at', '4', '--model', 'llama-3-70b']);
    expect(model.code).toBe(2);
    expect(model.stderr).toMatch(/unknown model "llama-3-70b" for provider openai/);
    const provider = await jbx(['fork', failed, '--at', '4', '--provider', 'mistral']);
    expect(provider.code).toBe(2);
    expect(provider.stderr).toMatch(/unknown provider "mistral"; use one of openai, anthropic/);
    const set = await jbx(['fork', failed, '--at', '4', '--set', 'model=gpt-4o']);
    expect(set.code).toBe(2);
    expect(set.stderr).toMatch(/use --model instead/);

    const folder = path.join(setup.tapeDir, 'other-project');
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      path.join(folder, 'jukebox.config.json'),
      JSON.stringify({ agents: [path.join(__dirname, '../replay/fixtures/otherAgent.ts')] }),
    );
    const missing = await jbx(['fork', failed, '--at', '4', '--project', folder]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no agent named "researchAgent"/);
    expect(hashOf(failed)).toBe(before);
  });

  it('warns, showing what changed, when the agent code differs from the tape’s, and forks anyway', async () => {
    const folder = path.join(setup.tapeDir, 'changed-project');
    mkdirSync(folder, { recursive: true });
    const fixtures = path.join(__dirname, '../replay/fixtures');
    writeFileSync(
      path.join(folder, 'jukebox.config.json'),
      JSON.stringify({
        agents: [path.join(fixtures, 'changedAgent.ts')],
        workflows: path.join(fixtures, 'changedWorkflows.ts'),
      }),
    );
    setup.model.loadScript(FLAKY_PROMPT_SCRIPT);
    const r = await jbx([
      'fork',
      failed,
      '--at',
      '4',
      '--set',
      `messages.0.content=${FIXED}`,
      '--project',
      folder,
      '--task-queue',
      setup.env.taskQueue,
    ]);
    expect(r.stderr).toMatch(
      /warning: the agent code changed since this tape was recorded \(tape blake3:\w+, now blake3:\w+\)/,
    );
    expect(r.stderr).toMatch(/the fork goes ahead/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/completed/);
  });
});
