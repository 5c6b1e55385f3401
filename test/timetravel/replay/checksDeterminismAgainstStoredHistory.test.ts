import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blake3 } from '../../../src/recorder/tape';
import { toHex } from '../../../src/recorder/tape/hash';
import { loadStoredHistory, sidecarPath } from '../../../src/temporal';
import { temporalConfigFromEnv } from '../../../src/temporal/config';
import { runJbx } from './jbx';
import { QUESTION, recordingSetup } from './recordedRun';

const FIXTURES = path.join(__dirname, 'fixtures');

function project(dir: string, name: string, workflows: string, agents: string): string {
  const folder = path.join(dir, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'jukebox.config.json'), JSON.stringify({ workflows, agents: [agents] }));
  return folder;
}

describe('jbx replay --temporal: Temporal determinism replay from the history stored with the tape', () => {
  let setup: Awaited<ReturnType<typeof recordingSetup>>;
  let tape: string;

  beforeAll(async () => {
    setup = await recordingSetup();
    ({ tapeFile: tape } = await setup.record({ question: QUESTION }));
  });
  afterAll(async () => {
    await setup?.close();
  });

  it('stores the history content-addressed beside the tape, named by a sidecar', () => {
    const car = JSON.parse(readFileSync(sidecarPath(tape), 'utf8'));
    const file = path.join(path.dirname(tape), car.history);
    expect(car.history).toBe(`${car.hash}.history`);
    expect(toHex(blake3(readFileSync(file)))).toBe(car.hash);
    const { history } = loadStoredHistory(tape);
    expect(history.events?.length).toBe(car.eventCount);
    expect(history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe(
      'researchAgent',
    );
  });

  it('the current code replays deterministically (exit 0), through Worker.runReplayHistory', async () => {
    const r = await runJbx(['replay', '--temporal', tape, '--json'], { offline: true });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      deterministic: true,
      workflowId: expect.stringMatching(/^researchAgent-/),
    });
  });

  it('a rewrite that issues different commands is not deterministic (exit 1)', async () => {
    const folder = project(
      setup.tapeDir,
      'reordered',
      path.join(FIXTURES, 'reorderedWorkflows.ts'),
      path.join(FIXTURES, 'reorderedAgent.ts'),
    );
    const r = await runJbx(['replay', '--temporal', tape, '--json', '--project', folder], { offline: true });
    expect(r.code).toBe(1);
    const json = JSON.parse(r.stdout);
    expect(json.deterministic).toBe(false);
    expect(json.error).toMatch(/nondeterminism/i);
  });

  it('a prompt edit passes Temporal determinism but fails the offline divergence audit: the two checks answer different questions', async () => {
    const folder = project(
      setup.tapeDir,
      'changed',
      path.join(FIXTURES, 'changedWorkflows.ts'),
      path.join(FIXTURES, 'changedAgent.ts'),
    );
    const temporal = await runJbx(['replay', '--temporal', tape, '--json', '--project', folder], {
      offline: true,
    });
    expect(temporal.code).toBe(0);
    const offline = await runJbx(['replay', tape, '--json', '--project', folder, '--skip-code-check'], {
      offline: true,
    });
    expect(offline.code).toBe(1);
    expect(JSON.parse(offline.stdout).divergence.fields).toEqual(['system']);
  });

  it('a tampered history file is refused with the hash it should have (exit 1)', async () => {
    const car = JSON.parse(readFileSync(sidecarPath(tape), 'utf8'));
    const file = path.join(path.dirname(tape), car.history);
    const good = readFileSync(file);
    try {
      const bad = Buffer.from(good);
      bad[bad.length - 3] = (bad[bad.length - 3] ?? 0) ^ 0xff;
      writeFileSync(file, bad);
      const r = await runJbx(['replay', '--temporal', tape], { offline: true });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`not the ${car.hash} the sidecar names`));
    } finally {
      writeFileSync(file, good);
    }
  });

  it('without a stored history it fetches the run from the Temporal server and stores it', async () => {
    rmSync(sidecarPath(tape));
    const r = await runJbx(['replay', '--temporal', tape, '--json']);
    expect(r.stderr).toMatch(/fetching it from the Temporal server/);
    expect(r.code).toBe(0);
    expect(existsSync(sidecarPath(tape))).toBe(true);
    // Offline, with the sidecar gone and no server reachable, the message says what to do.
    rmSync(sidecarPath(tape));
    const off = await runJbx(['replay', '--temporal', tape], { offline: true });
    expect(off.code).toBe(1);
    expect(off.stderr).toMatch(/no workflow history stored beside it .*captureRunHistory/s);
  });

  it('a run the server does not hold is refused naming the namespace and address it looked in', async () => {
    if (existsSync(sidecarPath(tape))) rmSync(sidecarPath(tape));
    const r = await runJbx(['replay', '--temporal', tape], {
      env: { JUKEBOX_TEMPORAL_NAMESPACE: 'default' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`from namespace default at ${temporalConfigFromEnv().address} failed`);
    expect(r.stderr).toMatch(/not found/i);
    expect(r.stderr).toContain('set JUKEBOX_TEMPORAL_NAMESPACE / JUKEBOX_TEMPORAL_ADDRESS');
  });
});
