import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  JukeboxPlugin,
  JukeboxPluginGivenTwiceError,
  WorkflowCodeImportsNodeModuleError,
} from '../../../src/temporal';
import { temporalConfigFromEnv } from '../../../src/temporal/config';
import { runJbx as jbx } from '../../timetravel/replay/jbx';
import * as activities from './fixtures/helloActivities';
import * as quietActivities from './fixtures/quietActivities';

const FIXTURES = path.join(__dirname, 'fixtures');

describe('JukeboxPlugin on a plain Temporal worker', () => {
  const config = temporalConfigFromEnv();
  const tapes = mkdtempSync(path.join(os.tmpdir(), 'jukebox-plugin-tapes-'));
  let nativeConnection: NativeConnection;
  let connection: Connection;

  beforeAll(async () => {
    nativeConnection = await NativeConnection.connect({ address: config.address });
    connection = await Connection.connect({ address: config.address });
  });
  afterAll(async () => {
    await nativeConnection?.close();
    await connection?.close();
    rmSync(tapes, { recursive: true, force: true });
  });

  it("records a plain workflow's activities onto a sealed tape that jbx ls, show and verify read", async () => {
    const taskQueue = `plugin-${Date.now().toString(36)}`;
    const plugin = new JukeboxPlugin({ tape: { dir: tapes } });
    // Temporal's hello-world worker, plus one plugin.
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      workflowsPath: path.join(FIXTURES, 'helloWorkflows.ts'),
      activities,
      plugins: [plugin],
    });
    const client = new Client({ connection, namespace: config.namespace, plugins: [plugin] });
    const workflowId = `hello-${taskQueue}`;
    const result = await worker.runUntil(
      client.workflow.execute('helloWorkflow', { taskQueue, workflowId, args: ['Temporal'] }),
    );
    expect(result).toBe('HELLO, TEMPORAL!');

    const ls = await jbx(['ls', '--dir', tapes, '--json']);
    expect(ls.code, ls.stderr).toBe(0);
    const rows = JSON.parse(ls.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ workflow: 'helloWorkflow', workflowId, steps: 2, outcome: 'completed' });

    const tape = path.join(tapes, readdirSync(tapes).find((f) => f.endsWith('.jbx'))!);
    const show = await jbx(['show', tape, '--json']);
    expect(show.code, show.stderr).toBe(0);
    const shown = JSON.stringify(JSON.parse(show.stdout));
    // Each activity's input and output, and the workflow's result in the outcome.
    for (const value of ['"greet"', '"shout"', '"Temporal"', '"Hello, Temporal!"', '"HELLO, TEMPORAL!"'])
      expect(shown).toContain(value);

    const verify = await jbx(['verify', tape, '--json']);
    expect(verify.code, verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ sealed: true });
  });

  it('refuses to be given twice to one worker, and to one client', async () => {
    const twice = Worker.create({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue: 'never-polled',
      activities,
      plugins: [new JukeboxPlugin({ tape: false }), new JukeboxPlugin({ tape: false })],
    });
    const message = (where: string) =>
      `JukeboxPlugin was given more than once to this ${where} (in its plugins, or once there and once on its ` +
      'connection): each step would be recorded and intercepted twice. Pass one JukeboxPlugin; put every tool ' +
      'and option into that one.';
    const refused = (await twice.catch((e) => e)) as JukeboxPluginGivenTwiceError;
    expect(refused).toBeInstanceOf(JukeboxPluginGivenTwiceError);
    expect(refused.code).toBe('JUKEBOX_PLUGIN_GIVEN_TWICE');
    expect(refused.message).toBe(message('worker'));
    const plugin = new JukeboxPlugin({ tape: false });
    expect(() => new Client({ connection, plugins: [plugin, plugin] })).toThrow(
      new JukeboxPluginGivenTwiceError('client'),
    );
    expect(() => new Client({ connection, plugins: [plugin, plugin] })).toThrow(message('client'));
  });

  it('names the Node module a workflows module imports and the file importing it', async () => {
    const created = Worker.create({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue: 'never-polled',
      workflowsPath: path.join(FIXTURES, 'nodeImportingWorkflows.ts'),
      plugins: [new JukeboxPlugin({ tape: false })],
    });
    await expect(created).rejects.toBeInstanceOf(WorkflowCodeImportsNodeModuleError);
    const err = (await created.catch((e) => e)) as WorkflowCodeImportsNodeModuleError;
    expect(err.code).toBe('WORKFLOW_IMPORTS_NODE_MODULE');
    expect(err.imports).toEqual([
      { module: 'fs', importedBy: [expect.stringMatching(/fixtures\/readsFile\.ts$/)] },
    ]);
    expect(err.message).toBe(
      `The workflows module ${path.join(FIXTURES, 'nodeImportingWorkflows.ts')} reaches Node modules that cannot ` +
        "run in a Temporal workflow: 'fs' (imported by test/temporal/worker/fixtures/readsFile.ts). Workflow code " +
        'is deterministic orchestration only: import agents and Jukebox from `jukebox/workflow`, move file, ' +
        'network and clock access into tools or activities, and import activity types with `import type`.',
    );
  });

  it("leaves the worker's own activities to their own heartbeats: a quiet one times out for them", async () => {
    const taskQueue = `plugin-quiet-${Date.now().toString(36)}`;
    const plugin = new JukeboxPlugin({ tape: false });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      workflowsPath: path.join(FIXTURES, 'quietWorkflows.ts'),
      activities: quietActivities,
      plugins: [plugin],
    });
    const client = new Client({ connection, namespace: config.namespace, plugins: [plugin] });
    // Quiet for 8 s with a 2 s heartbeat timeout: the plugin's keep-alive timer, beating for Jukebox's steps, would
    // keep it alive (and replace the progress details an activity heartbeats with empty ones).
    const result = await worker.runUntil(
      client.workflow.execute('quietActivityWorkflow', {
        taskQueue,
        workflowId: `quiet-${taskQueue}`,
        args: [8_000, 2_000],
      }),
    );
    expect(result).toBe('timed out: HEARTBEAT');
  });
});
