/**
 * `jbx bundle` of a plain Temporal workflow's tape (Temporal's hello-world with JukeboxPlugin, no Jukebox agent)
 * prints a replay command that works: `jbx replay X.jbxb`, in another empty folder and with no network, runs
 * Temporal's replayer on the bundled history with the bundled code. A plain workflow bundled with --no-history
 * has nothing to replay from, and both commands say so and what to do. A folder of such bundles replays as a
 * suite (`jbx replay DIR`) the same way.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JukeboxPlugin } from '../../src/temporal';
import { temporalConfigFromEnv } from '../../src/temporal/config';
import * as activities from '../temporal/worker/fixtures/helloActivities';
import { runJbx as jbx } from '../timetravel/replay/jbx';

const FIXTURES = path.join(__dirname, '../temporal/worker/fixtures');

describe('jbx bundle of a plain Temporal workflow', () => {
  const config = temporalConfigFromEnv();
  const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-plain-bundle-'));
  const tapes = path.join(work, 'tapes');
  const elsewhere = path.join(work, 'elsewhere');
  let tape: string;

  beforeAll(async () => {
    mkdirSync(elsewhere);
    const taskQueue = `plain-bundle-${Date.now().toString(36)}`;
    const nativeConnection = await NativeConnection.connect({ address: config.address });
    const connection = await Connection.connect({ address: config.address });
    try {
      const plugin = new JukeboxPlugin({ tape: { dir: tapes } });
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace: config.namespace,
        taskQueue,
        workflowsPath: path.join(FIXTURES, 'helloWorkflows.ts'),
        activities,
        plugins: [plugin],
      });
      const client = new Client({ connection, namespace: config.namespace, plugins: [plugin] });
      const result = await worker.runUntil(
        client.workflow.execute('helloWorkflow', {
          taskQueue,
          workflowId: `hello-${taskQueue}`,
          args: ['Temporal'],
        }),
      );
      expect(result).toBe('HELLO, TEMPORAL!');
    } finally {
      await nativeConnection.close();
      await connection.close();
    }
    tape = path.join(tapes, readdirSync(tapes).find((f) => f.endsWith('.jbx'))!);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('prints a replay command that works in another empty folder, offline', async () => {
    const report = path.join(work, 'hello.jbxb');
    const bundled = await jbx(['bundle', tape, '-o', report], { cwd: work });
    expect(bundled.code, bundled.stderr).toBe(0);
    const hint = bundled.stdout.trim().split('\n').at(-1)!;
    expect(hint).toBe(
      "replay it anywhere: jbx replay hello.jbxb (helloWorkflow is a plain Temporal workflow: Temporal's replayer " +
        'runs its history with the bundled code)',
    );
    const copy = path.join(elsewhere, 'hello.jbxb');
    copyFileSync(report, copy);
    const replay = await jbx(['replay', 'hello.jbxb'], { cwd: elsewhere, offline: true });
    expect(replay.code, `${replay.stdout}\n${replay.stderr}`).toBe(0);
    expect(replay.stdout).toMatch(
      new RegExp(
        `^temporal replay of ${copy}: deterministic \\(\\d+ events, \\d+ ms, the bundle's own workflow code\\)`,
      ),
    );
    expect(replay.stderr).toContain('helloWorkflow is a plain Temporal workflow, not a Jukebox agent');
    // The replayed workflow calls the tape's outcome sink as it did live: a replay that passes logs no error.
    expect(replay.stderr).not.toMatch(/unregistered external sink|ERROR/);
    const json = await jbx(['replay', 'hello.jbxb', '--json'], { cwd: elsewhere, offline: true });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      deterministic: true,
      workflowId: expect.stringMatching(/^hello-/),
    });
  });

  it('jbx show and jbx diff read the tape inside the bundle', async () => {
    const bundle = path.join(elsewhere, 'hello.jbxb');
    const show = await jbx(['show', bundle, '--json']);
    expect(show.code, show.stderr).toBe(0);
    const shown = JSON.parse(show.stdout);
    expect(shown.header.workflowType).toBe('helloWorkflow');
    expect(shown.sealed).toBe(true);
    expect(shown.outcome.status).toBe('completed');
    const frames = JSON.stringify(shown.frames);
    for (const value of ['"greet"', '"shout"', '"Hello, Temporal!"', '"HELLO, TEMPORAL!"'])
      expect(frames).toContain(value);
    const diff = await jbx(['diff', tape, bundle, '--json']);
    expect(diff.code, diff.stderr).toBe(0);
    const d = JSON.parse(diff.stdout);
    expect(d.firstDivergence).toBeNull();
    expect(d.a.tapeId).toBe(d.b.tapeId);
    expect([d.a.outcome, d.b.outcome]).toEqual(['completed', 'completed']);
    const temporal = await jbx(['replay', '--temporal', 'hello.jbxb'], { cwd: elsewhere, offline: true });
    expect(temporal.code, temporal.stderr).toBe(0);
    expect(temporal.stderr).not.toMatch(/unregistered external sink|ERROR/);
  });

  it('bundled with --no-history, bundle and replay say it cannot replay and what to do', async () => {
    const report = path.join(work, 'nohistory.jbxb');
    const bundled = await jbx(['bundle', tape, '-o', report, '--no-history'], { cwd: work });
    expect(bundled.code, bundled.stderr).toBe(0);
    expect(bundled.stdout.trim().split('\n').at(-1)).toBe(
      'helloWorkflow is a plain Temporal workflow: it replays from its history, which --no-history left out; ' +
        'bundle it again without --no-history to replay it elsewhere',
    );
    const replay = await jbx(['replay', report], { cwd: elsewhere, offline: true });
    expect(replay.code).toBe(1);
    expect(replay.stderr).toContain(
      `${report} holds a plain Temporal workflow (helloWorkflow, not a Jukebox agent) and no workflow history (it ` +
        'was made with --no-history): there is nothing to replay it against.',
    );
  });

  it("jbx replay DIR replays a plain workflow bundle with Temporal's replayer, on worker threads or not", async () => {
    const suite = path.join(work, 'suite');
    mkdirSync(suite);
    copyFileSync(path.join(work, 'hello.jbxb'), path.join(suite, 'hello.jbxb'));
    const junit = path.join(work, 'suite.xml');
    // Run from the work folder (no project in it): each line names its tape relative to it.
    const replay = (args: string[]) => jbx(['replay', 'suite', ...args], { cwd: work, offline: true });
    for (const jobs of ['1', '2']) {
      const r = await replay(['--jobs', jobs, '--junit', junit]);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toMatch(
        /^match {7}suite\/hello\.jbxb {2}helloWorkflow: deterministic against its history \(\d+ events\), [\d.]+ ms \(a plain Temporal workflow: Temporal's replayer, bundle code\)$/,
      );
      expect(lines.at(-1)).toMatch(/^1 tapes: 1 match, 0 diverged, 0 could not be replayed, 0 unsealed /);
      expect(r.stderr).not.toMatch(/unregistered external sink|ERROR|no agent named/);
      const xml = readFileSync(junit, 'utf8');
      expect(xml).toContain('tests="1" failures="0" errors="0" skipped="0"');
      expect(xml).not.toContain('<failure');
    }
    const json = await replay(['--json']);
    expect(json.code, json.stderr).toBe(0);
    const [one] = JSON.parse(json.stdout).results;
    expect(one).toMatchObject({
      status: 'match',
      workflowType: 'helloWorkflow',
      recordedOutcome: 'completed',
      code: { source: 'bundle', module: expect.stringMatching(/suite\/hello\.jbxb#workflow-bundle\.js$/) },
      history: { events: expect.any(Number), deterministic: true },
    });
    expect(one.history.events).toBeGreaterThan(10);

    // Beside it, the one bundled with --no-history cannot be replayed, and its line says why and what to do.
    copyFileSync(path.join(work, 'nohistory.jbxb'), path.join(suite, 'nohistory.jbxb'));
    const both = await replay([]);
    expect(both.code).toBe(1);
    expect(both.stdout).toMatch(
      /(^|\n)ERROR {7}suite\/nohistory\.jbxb {2}BUNDLE_HAS_NO_HISTORY: \S*suite\/nohistory\.jbxb holds a plain Temporal workflow \(helloWorkflow, not a Jukebox agent\) and no workflow history \(it was made with --no-history\): there is nothing to replay it against; bundle the run again while its server is up\n/,
    );
    expect(both.stdout).toMatch(/\n2 tapes: 1 match, 0 diverged, 1 could not be replayed, 0 unsealed /);
  });
});
