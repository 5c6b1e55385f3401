import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureRunHistory, JukeboxPlugin } from '../../../src/temporal';
import { temporalConfigFromEnv } from '../../../src/temporal/config';
import * as activities from '../../temporal/worker/fixtures/helloActivities';
import { runJbx } from '../replay/jbx';

const WORKFLOWS = path.join(__dirname, '../../temporal/worker/fixtures/helloWorkflows.ts');

/**
 * A plain Temporal workflow (Temporal's hello world, no Jukebox agent) recorded by the plugin and bundled: every
 * command `jbx bundle` points at works on the .jbxb, from a folder holding nothing else.
 */
describe('a bundle of a plain Temporal workflow', () => {
  const config = temporalConfigFromEnv();
  const work = mkdtempSync(path.join(os.tmpdir(), 'jbx-plain-bundle-'));
  const tapes = path.join(work, 'tapes');
  const elsewhere = path.join(work, 'elsewhere');
  let tape: string;
  let bundle: string;

  beforeAll(async () => {
    const nativeConnection = await NativeConnection.connect({ address: config.address });
    const connection = await Connection.connect({ address: config.address });
    try {
      const taskQueue = `plain-bundle-${Date.now().toString(36)}`;
      const plugin = new JukeboxPlugin({ tape: { dir: tapes } });
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace: config.namespace,
        taskQueue,
        workflowsPath: WORKFLOWS,
        activities,
        plugins: [plugin],
      });
      const client = new Client({ connection, namespace: config.namespace, plugins: [plugin] });
      const handle = await worker.runUntil(async () => {
        const h = await client.workflow.start('helloWorkflow', {
          taskQueue,
          workflowId: `hello-${taskQueue}`,
          args: ['Temporal'],
        });
        expect(await h.result()).toBe('HELLO, TEMPORAL!');
        return h;
      });
      ({ tapeFile: tape } = await captureRunHistory(handle, tapes));
    } finally {
      await nativeConnection.close();
      await connection.close();
    }
    rmSync(elsewhere, { recursive: true, force: true });
    bundle = path.join(elsewhere, 'hello.jbxb');
    const made = await runJbx(['bundle', tape, '-o', bundle]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain('replay it anywhere: jbx replay hello.jbxb');
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('jbx show reads the tape inside the bundle', async () => {
    const r = await runJbx(['show', bundle, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const shown = JSON.parse(r.stdout);
    expect(shown.header.workflowType).toBe('helloWorkflow');
    expect(shown.sealed).toBe(true);
    expect(shown.outcome.status).toBe('completed');
    const text = JSON.stringify(shown.frames);
    for (const value of ['"greet"', '"shout"', '"Hello, Temporal!"', '"HELLO, TEMPORAL!"'])
      expect(text).toContain(value);
    const human = await runJbx(['show', bundle]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/helloWorkflow/);
  });

  it('jbx diff compares a bundle with its own tape: the same run, no divergence', async () => {
    const r = await runJbx(['diff', tape, bundle, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const d = JSON.parse(r.stdout);
    expect(d.firstDivergence).toBeNull();
    expect(d.a.tapeId).toBe(d.b.tapeId);
    expect(d.b.file).toContain(bundle);
    expect(d.a.outcome).toBe('completed');
    expect(d.b.outcome).toBe('completed');
  });

  it("jbx replay, as the bundle's hint says, replays the plain workflow against its history from an empty folder", async () => {
    rmSync(tapes, { recursive: true, force: true }); // neither the tape, nor its history, nor its code is left
    const r = await runJbx(['replay', 'hello.jbxb', '--json'], { cwd: elsewhere, offline: true });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      deterministic: true,
      workflowId: expect.stringMatching(/^hello-/),
    });
    expect(r.stderr).toContain('helloWorkflow is a plain Temporal workflow, not a Jukebox agent');
    // The replayed workflow calls the tape's outcome sink as it did live: a replay that passes logs no error.
    expect(r.stderr).not.toMatch(/unregistered external sink|ERROR/);
    const t = await runJbx(['replay', '--temporal', 'hello.jbxb'], { cwd: elsewhere, offline: true });
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toMatch(/deterministic/);
    expect(t.stderr).not.toMatch(/unregistered external sink|ERROR/);
  });
});
