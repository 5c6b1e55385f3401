/**
 * The escape suite, process lifetime: a real Jukebox worker runs a tool whose shell command leaves processes
 * behind (`sleep ... &`, a double fork) and keeps both cores busy (four busy loops: the machine is starved when
 * the worker dies); the worker is SIGKILLed mid-command. Within a second of the SIGKILL every process of the
 * command has exited, in both views (its sandbox chain, what it started, the loops). What the dead worker
 * left (its command's scratch folder) is removed by the next worker's start-up, and the real workspace (and a
 * folder beside it) is unchanged, byte for byte, after the kill and after the run's rollback.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { REAPER_NAME } from '../../../src/booth/shell/reaper';
import { startAgent } from '../../../src/temporal';
import {
  cgroupsNamed,
  describeProcess,
  exitTimes,
  hasExited,
  parentOf,
  processesMentioning,
  within,
} from '../../support/processes';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';
import type { BoothScenario } from '../../temporal/workflow/fixtures/boothWorkflows';
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
    // Digits (the sleeps' lengths start with it) no other process on the machine has in its arguments: every
    // process naming it is the command's, and the clean-up below kills them all.
    const marker = `${view === 'overlay' ? 31810 : 31820}${process.pid}${Math.floor(1_000 + Math.random() * 9_000)}`;
    try {
      const scratch = path.join(world.base, 'scratch');
      fs.mkdirSync(scratch);
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
                command: `for i in 1 2 3 4; do (while :; do :; done) & done; sleep ${marker}1 & (sleep ${marker}2 &) ; sleep ${marker}3; echo > never.txt`,
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
        await within(60_000, () =>
          [1, 2, 3].every((i) => processesMentioning(`sleep ${marker}${i}`).length > 0),
        ),
        first.output(),
      ).toBe(true);
      const [name] = fs.readdirSync(scratch);
      expect(name).toMatch(/^jbx-shell-/);
      // The chain (the overlay script in the overlay view, bwrap and its sandbox's first process), the command's
      // shell, its four loops and three sleeps: every one names the marker or the scratch folder.
      const ofCommand = () => [...new Set([...processesMentioning(marker), ...processesMentioning(name!)])];
      const chain = view === 'overlay' ? 3 : 2;
      expect(await within(5_000, () => ofCommand().length >= chain + 8)).toBe(true);
      const pids = ofCommand();
      expect(cgroupsNamed(name!).length).toBeGreaterThan(0);
      // The worker's reaper, waiting for the worker to die: its owner tag is the command's (boot-pid-start).
      const tag = name!.split('-').slice(2, 5).join('-');
      const reapers = processesMentioning(REAPER_NAME).filter((pid) =>
        fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(tag),
      );
      expect(reapers).toHaveLength(1);

      // Timed from the SIGKILL: the worker's own exit (its memory torn down) counts too.
      const killed = performance.now();
      const [, times] = await Promise.all([first.kill('SIGKILL'), exitTimes(pids, killed, 30_000)]);
      const late = [...times].filter(([, t]) => t === null || t > 1_000);
      expect(late, `exit times after the SIGKILL (ms): ${JSON.stringify([...times])}`).toEqual([]);
      // The reaper's own clean-up (an `rmdir` of the command's group, named like its scratch folder) may be
      // running at this moment: those are the reaper's children, not the command's. One may exit between the
      // listing and the read of its parent: gone, it is not left either.
      const left = ofCommand().filter((pid) => {
        const parent = parentOf(pid);
        return parent !== null && parent !== reapers[0];
      });
      expect(left, left.map((pid) => describeProcess(pid)).join('\n')).toEqual([]);
      expect(await within(10_000, () => hasExited(reapers[0]!))).toBe(true);
      await handle.terminate('the test killed its worker');

      // The dead worker's reaper removed its command's groups (or a worker starting meanwhile swept them); its
      // scratch folder waits for the next start-up.
      expect(await within(10_000, () => cgroupsNamed(name!).length === 0)).toBe(true);
      expect(fs.readdirSync(scratch)).toEqual([name]);
      expect(fingerprint([world.workspace, world.outside])).toEqual(before);

      // The killed command staged nothing; the run's rollback (before a worker's sweeper would do it) leaves the
      // real targets as they were too.
      const booths = new BoothRuntime({ workspaceRoot: world.workspace, stagingRoot: world.staging });
      const staged = await booths.stagedRuns();
      expect(staged.map((r) => r.workflowId)).toEqual([handle.workflowId]);
      const booth = await booths.open(staged[0]!.workflowId, staged[0]!.runId);
      expect((await booth.changeSet()).files).toEqual([]);
      await booth.discard();
      await booth.close();
      await booths.close();
      expect(await booths.stagedRuns()).toEqual([]);
      expect(fingerprint([world.workspace, world.outside])).toEqual(before);

      const second = await spawnWorker(env, 90_000, ENTRY);
      workers.push(second);
      const swept = JSON.parse(/swept (\{.*\})/.exec(second.output())![1]!) as Record<string, string[]>;
      expect(swept.scratch).toEqual([name]);
      expect(fs.readdirSync(scratch)).toEqual([]);
      await second.kill();
      expect(fingerprint([world.workspace, world.outside])).toEqual(before);
    } finally {
      for (const pid of processesMentioning(marker)) process.kill(pid, 'SIGKILL');
      world.cleanup();
    }
  });
});
