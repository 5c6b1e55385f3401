import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { researchAgent } from '../../../examples/sample/agent';
import { loadProjectConfig, locateAgent, readTimeline, replayTape } from '../../../src/timetravel/replay';
import { runJbx } from './jbx';
import { QUESTION, recordingSetup } from './recordedRun';

const FIXTURES = path.join(__dirname, 'fixtures');

/** A project folder whose jukebox.config.json points at the given agent and workflows modules. */
function project(dir: string, name: string, config: Record<string, unknown>): string {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config));
  const folder = path.join(dir, name);
  require('node:fs').mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'jukebox.config.json'), JSON.stringify(config));
  return folder;
}

describe('offline replay of a recorded run', () => {
  let setup: Awaited<ReturnType<typeof recordingSetup>>;
  let tape: string;

  beforeAll(async () => {
    setup = await recordingSetup();
    ({ tapeFile: tape } = await setup.record({ question: QUESTION }));
    // From here on nothing may go live: the model server is gone.
    await setup.model.close();
  });
  afterAll(async () => {
    await setup?.close();
  });

  it('re-executes the agent in process with every step answered from the tape', async () => {
    const before = readFileSync(tape);
    const report = await replayTape(tape, { agent: researchAgent as never });
    expect(report).toMatchObject({ status: 'match', steps: 7, replayed: 7, recordedOutcome: 'completed' });
    expect((report.output as { turns: number }).turns).toBe(4);
    expect(readFileSync(tape).equals(before)).toBe(true);
  });

  it('jbx replay runs with the model server stopped and every outbound connection refused (unshare -n)', async () => {
    const probe = await runJbx(['--help'], { offline: true });
    expect(probe.code).toBe(0);
    const r = await runJbx(['replay', tape, '--json'], { offline: true });
    expect(r.stderr).not.toMatch(/warning/);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json).toMatchObject({ status: 'match', steps: 7, replayed: 7, divergence: null });
    // No project named: the run's own workflow code, kept by its hash beside the tape by the recording worker.
    expect(json.code).toMatchObject({ matches: true, source: 'stored' });
    expect(json.codeSource).toBe('stored');
    expect(json.agentModule).toBe(
      path.join(
        setup.tapeDir,
        'code',
        `${readTimeline(tape).tape.header.agentCodeHash.slice('blake3:'.length)}.js`,
      ),
    );
  });

  it('finds the agent from the tape header workflowType and the project configuration', async () => {
    // This repository names its example agents in its own jukebox.config.json.
    const config = loadProjectConfig(path.resolve(__dirname, '../../..'));
    expect(config.source).toBe(path.resolve(__dirname, '../../../jukebox.config.json'));
    const t = readTimeline(tape);
    expect(t.tape.header.workflowType).toBe('researchAgent');
    const located = await locateAgent(t.tape.header.workflowType, config);
    expect(located.agent.name).toBe('researchAgent');
  });

  it('on changed agent code warns with what changed, names the first diverging frame, shows expected vs actual, exits 1', async () => {
    const dir = setup.tapeDir;
    const folder = project(dir, 'changed', {
      agents: [path.join(FIXTURES, 'changedAgent.ts')],
      workflows: path.join(FIXTURES, 'changedWorkflows.ts'),
    });
    const r = await runJbx(['replay', tape, '--json', '--project', folder], { offline: true });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /warning: the agent code changed since this tape was recorded \(tape blake3:[0-9a-f]+, now blake3:[0-9a-f]+\)/,
    );
    const json = JSON.parse(r.stdout);
    const t = readTimeline(tape);
    expect(json.status).toBe('diverged');
    expect(json.divergence).toMatchObject({
      step: 0,
      kind: 'llm.request',
      frame: t.steps[0]!.requestFrame,
      fields: ['system'],
    });
    expect(json.divergence.expected.system).toMatch(/careful research assistant/);
    expect(json.divergence.actual.system).toBe('You are a research assistant. Be brief.');
    expect(r.stderr).toMatch(/replay diverged at step 0 \(frame \d+, llm\.request\): system/);

    const human = await runJbx(['replay', tape, '--project', folder, '--skip-code-check'], { offline: true });
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/DIVERGED at step 0, frame \d+ \(llm\.request\)/);
    expect(human.stdout).toMatch(
      /system\s+"You are a careful research assistant.*"You are a research assistant\. Be brief\."/,
    );
  });

  it('a tool-first rewrite diverges on the kind of step 0', async () => {
    const folder = project(setup.tapeDir, 'reordered', {
      agents: [path.join(FIXTURES, 'reorderedAgent.ts')],
      workflows: path.join(FIXTURES, 'reorderedWorkflows.ts'),
    });
    const r = await runJbx(['replay', tape, '--json', '--project', folder, '--skip-code-check'], {
      offline: true,
    });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).divergence).toMatchObject({ step: 0, kind: 'llm.request', fields: ['kind'] });
  });

  it('a tape whose agent code cannot be found gets a message naming where it looked, exit 1', async () => {
    const folder = project(setup.tapeDir, 'other', { agents: [path.join(FIXTURES, 'otherAgent.ts')] });
    const r = await runJbx(['replay', tape, '--project', folder, '--skip-code-check'], { offline: true });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /no agent named "researchAgent".*otherAgent\.ts.*agents found: greeterAgent.*jukebox\.config\.json/s,
    );
  });

  it('a missing tape is a usage error (2), a file that is not a tape is damaged (3)', async () => {
    expect((await runJbx(['replay', path.join(setup.tapeDir, 'nope.jbx')])).code).toBe(2);
    const junk = path.join(setup.tapeDir, 'junk.jbx');
    writeFileSync(junk, 'not a tape at all');
    const r = await runJbx(['replay', junk]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/not a Jukebox tape/);
  });
});
