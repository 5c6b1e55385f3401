import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepScript } from '../../examples/sample/stepScript';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { DEFAULT_TEST_BUCKET, type ObjectServerHandle } from '../../servers/objectserver';
import { tapeFileName } from '../../src/recorder';
import { readTape } from '../../src/recorder/tape';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { completedActivities, waitUntil } from '../support/history';
import { objectServer, uniquePrefix } from '../support/objectServer';
import { startResearchRun } from '../support/researchRun';
import { spawnWorker, type WorkerProcess } from '../support/workerProcess';
import { runJbx } from '../timetravel/replay/jbx';

const STEPS = 5;

describe('one run whose steps execute on two worker hosts', () => {
  let model: ModelServer;
  let connection: Connection;
  let server: ObjectServerHandle;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    server = await objectServer();
    model = await startModelServer({ script: stepScript(STEPS, { chunkDelayMs: 10, chunkSize: 8 }) });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
  });

  it('records one sealed tape with one chain in the object store, which jbx verifies and replays', async () => {
    const { namespace } = temporalConfigFromEnv();
    const taskQueue = `hosts-${Date.now()}`;
    const prefix = uniquePrefix('hosts');
    (await server.bucket()).destroy();
    // Two "hosts": separate processes with separate tape folders, sharing only Temporal and the object store.
    const hostEnv = (name: string) => ({
      JUKEBOX_TASK_QUEUE: taskQueue,
      JUKEBOX_MODEL_URL: model.url,
      JUKEBOX_TAPE_DIR: mkdtempSync(path.join(os.tmpdir(), `jbx-${name}-tapes-`)),
      ...server.workerEnv(undefined, prefix),
    });
    const envA = hostEnv('a');
    const envB = hostEnv('b');
    const a = await spawnWorker(envA);
    workers.push(a);
    const handle = await startResearchRun({ connection, namespace, taskQueue, steps: STEPS });
    // Host a runs the first steps and dies; host b then picks the run up and finishes it.
    await waitUntil(
      'three steps completed on host a',
      async () => (await completedActivities(handle)) >= 3,
    ).catch((err) => {
      throw new Error(`${err.message}\nworker a said:\n${a.output().slice(-3000)}`);
    });
    await a.kill('SIGKILL');
    const b = await spawnWorker(envB);
    workers.push(b);
    const result = await handle.result();
    expect(result.output.answer).toBe(`Done after ${STEPS} lookups.`);
    const { runId } = await handle.describe();

    // Neither host's tape folder holds a tape: both wrote to the store.
    for (const env of [envA, envB])
      expect(
        readdirSync(env.JUKEBOX_TAPE_DIR, { recursive: true }).filter((f) => String(f).endsWith('.jbx')),
      ).toEqual([]);

    const url = `s3://${DEFAULT_TEST_BUCKET}/${prefix}${tapeFileName(handle.workflowId, runId)}`;
    const verified = await runJbx(['verify', url, '--json'], { env: envB });
    expect(verified.stderr).toMatch(/fetched s3:\/\/.* segments, \d+ bytes, into /);
    expect(verified.code).toBe(0);
    const report = JSON.parse(verified.stdout);
    expect(report).toMatchObject({ ok: true, sealed: true, firstBadFrame: null });

    // One chain from header to seal, holding steps from both processes.
    const local = /into (\S+\.jbx)/.exec(verified.stderr)![1]!;
    const tape = readTape(local);
    expect(tape.sealed).toBe(true);
    expect(tape.header.runId).toBe(runId);
    const pids = new Set(
      tape.frames.filter((f) => f.kind === 'activity.start').map((f) => (f.payload as { pid: number }).pid),
    );
    expect(pids).toEqual(new Set([a.child.pid, b.child.pid]));

    // The fetched tape replays offline, and so does the URL itself (fetched, then replayed).
    const offline = await runJbx(['replay', local, '--json'], { offline: true });
    expect(offline.code).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ status: 'match', divergence: null });
    const online = await runJbx(['replay', url, '--json'], { env: envB });
    expect(online.code).toBe(0);
    expect(JSON.parse(online.stdout)).toMatchObject({ status: 'match', divergence: null });
  });
});
