/**
 * The escape suite, process lifetime: a real Jukebox worker runs a tool whose shell command leaves processes
 * behind (`sleep ... &`); the worker is SIGKILLed mid-command. Within a second no process of the command is
 * alive (its sandbox chain and what it started), in both views. What the dead worker left (the command's scratch
 * folder, its control groups) is removed by the next worker's start-up, and the real workspace is unchanged.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { startAgent } from '../../../src/temporal';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';
import type { BoothScenario } from '../../temporal/workflow/fixtures/boothWorkflows';
import { cgroupsNamed, processesWith, within } from './processes';
import { fingerprint, makeWorld, type World } from './targets';

const ENTRY = 'test/booth/escape/fixtures/shellWorker.ts';

describe('a shell command dies with its worker', () => {
  let connection: Connection;
  const workers: WorkerProcess[] = [];
  const bundleDir = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-shell-worker-'));

  beforeAll(async () => {
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    fs.rmSync(bundleDir, { recursive: true, force: true });
  });

  it.each(['overlay', 'copy'] as const)('%s view: worker SIGKILLed mid-command', async (view) => {
    const world: World = makeWorld();
    try {
      const scratch = path.join(world.base, 'scratch');
      fs.mkdirSync(scratch);
      const marker = `${view === 'overlay' ? 31810 : 31820}`;
      const env = {
        JUKEBOX_WORKSPACE: world.workspace,
        JUKEBOX_STAGING: world.staging,
        JUKEBOX_SCRATCH: scratch,
        JUKEBOX_SHELL_VIEW: view,
        JUKEBOX_TASK_QUEUE: `shell-dies-${view}-${Date.now().toString(36)}`,
        JUKEBOX_BUNDLE_FILE: path.join(bundleDir, 'workflows.bundle.js'),
      };
      const before = fingerprint([world.workspace, world.outside]);
      const first = await spawnWorker(env, 90_000, ENTRY);
      workers.push(first);
      // Its own scratch folder is new; control groups of other dead workers on this machine may be swept.
      expect(first.output()).toContain('swept {"scratch":[],"groups":[');
      const handle = await startAgent<BoothScenario, unknown>(
        'boothAgent',
        {
          stage: [
            {
              tool: 'run_shell',
              args: {
                command: `sleep ${marker}1 & (sleep ${marker}2 &) ; sleep ${marker}3; echo > never.txt`,
              },
            },
          ],
        },
        {
          connection,
          namespace: temporalConfigFromEnv().namespace,
          taskQueue: env.JUKEBOX_TASK_QUEUE,
          runOptions: { maximumAttempts: 1 },
        },
      );
      expect(
        await within(60_000, () => [1, 2, 3].every((i) => processesWith(`sleep ${marker}${i}`).length > 0)),
        first.output(),
      ).toBe(true);
      const [name] = fs.readdirSync(scratch);
      expect(name).toMatch(/^jbx-shell-/);
      // The chain: the overlay script (overlay view), bwrap and its sandbox's first process.
      const chain = view === 'overlay' ? 3 : 2;
      expect(await within(5_000, () => processesWith(name!).length >= chain)).toBe(true);
      const groups = cgroupsNamed(name!);
      expect(groups.length).toBeGreaterThan(0);

      await first.kill('SIGKILL');
      const gone = () => processesWith(`sleep ${marker}`).length === 0 && processesWith(name!).length === 0;
      expect(await within(1_000, gone)).toBe(true);
      await handle.terminate('the test killed its worker');

      // The dead worker could not clean up: its scratch folder and (empty) groups are still there.
      expect(fs.readdirSync(scratch)).toEqual([name]);
      expect(cgroupsNamed(name!)).toEqual(groups);
      const second = await spawnWorker(env, 90_000, ENTRY);
      workers.push(second);
      const swept = JSON.parse(/swept (\{.*\})/.exec(second.output())![1]!) as Record<string, string[]>;
      expect(swept.scratch).toEqual([name]);
      expect(swept.groups).toContain(name);
      expect(fs.readdirSync(scratch)).toEqual([]);
      expect(cgroupsNamed(name!)).toEqual([]);
      await second.kill();
      expect(fingerprint([world.workspace, world.outside])).toEqual(before);
    } finally {
      world.cleanup();
    }
  });
});
