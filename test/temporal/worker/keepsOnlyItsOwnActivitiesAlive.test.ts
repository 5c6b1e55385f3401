/**
 * JukeboxPlugin keeps its own steps alive with a heartbeat timer; the worker's other activities keep only the
 * heartbeats they send themselves. A plain activity that goes quiet is still timed out by its heartbeat timeout
 * on a worker with the plugin, as on one without it.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JukeboxPlugin } from '../../../src/temporal';
import { temporalConfigFromEnv } from '../../../src/temporal/config';
import * as activities from './fixtures/quietActivities';

describe("the plugin's keep-alive timer", () => {
  const config = temporalConfigFromEnv();
  let nativeConnection: NativeConnection;
  let connection: Connection;

  beforeAll(async () => {
    nativeConnection = await NativeConnection.connect({ address: config.address });
    connection = await Connection.connect({ address: config.address });
  });
  afterAll(async () => {
    await nativeConnection?.close();
    await connection?.close();
  });

  it("does not beat for the worker's own activities: a quiet one times out for its heartbeats", async () => {
    const taskQueue = `quiet-${Date.now().toString(36)}`;
    const plugin = new JukeboxPlugin({ tape: false });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      workflowsPath: path.join(__dirname, 'fixtures/quietWorkflows.ts'),
      activities,
      plugins: [plugin],
    });
    const client = new Client({ connection, namespace: config.namespace, plugins: [plugin] });
    // Quiet for 8 s with a 2 s heartbeat timeout: kept alive by a timer, it would finish.
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
