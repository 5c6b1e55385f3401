/**
 * A fork never doubles an effect its parent staged: the parent's tape may hold the effect frames of a tool
 * step's attempt whose partial staging was thrown away, and of an attempt whose checkpoint a later attempt
 * reused; the fork's restored world takes each step's counted staging once, its restore is a booth step that
 * a crash halfway through cannot apply twice, and its live steps add their own effects once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { TapeRecorder } from '../../../src/recorder';
import { runWithActivityTape } from '../../../src/recorder/activityTape';
import { restoreWorld } from '../../../src/timetravel/fork';
import { readTimeline } from '../../../src/timetravel/replay';
import {
  expectedWorld,
  prepareStepWorld,
  readWorld,
  recordPaymentTool,
  type StepWorld,
  stepWorldBooth,
} from '../../support/stepWorld';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'jbx-fork-once-'));
const runtimes: BoothRuntime[] = [];
afterAll(async () => {
  for (const r of runtimes) await r.close();
  rmSync(tmp, { recursive: true, force: true });
});

function boothOver(world: StepWorld): BoothRuntime {
  const r = new BoothRuntime(stepWorldBooth(world, { shell: { isolation: 'bwrap' } }));
  runtimes.push(r);
  return r;
}

const signal = new AbortController().signal;

describe('a fork restores its parent’s staging exactly once', () => {
  it('takes each step’s counted attempt, survives a crash mid-restore, and its live step adds its effects once', async () => {
    // The parent: step 0's attempt 1 dies after its effect frames reached the tape, attempt 2 stages afresh;
    // step 1's attempt 1 checkpoints and dies, attempt 2 reuses it. Its tape then holds three sets of frames
    // for two steps' worth of effects.
    const parentWorld = await prepareStepWorld(path.join(tmp, 'parent'));
    const parent = boothOver(parentWorld);
    const run = { workflowId: 'wf-parent', runId: 'run-1' };
    const rec = new TapeRecorder({
      dir: path.join(tmp, 'tapes'),
      fsync: 'none',
      agentCodeHash: 'blake3:test',
    });
    const attempt = async (
      step: number,
      n: number,
      ref: string,
      dies: 'after-staging' | 'after-checkpoint' | null,
    ) => {
      const info = {
        workflowExecution: run,
        workflowType: 'boothAgent',
        taskQueue: 'q',
        activityId: `${step + 1}`,
        attempt: n,
        activityType: 'toolStep',
      };
      const tape = rec.forActivity(info, step);
      tape.start({ step, name: 'record_payment', args: { ref } }, []);
      await tape.toolCall('record_payment', { ref });
      await runWithActivityTape(tape, async () => {
        const opened = await parent.openStep(run.workflowId, run.runId, { id: info.activityId, attempt: n });
        try {
          const output = opened.reused
            ? opened.reused.result
            : await recordPaymentTool.run({ ref }, { signal, booth: opened.booth });
          if (dies === 'after-staging') return tape.flushEffects('the step staging');
          if (!opened.reused) await opened.booth.completeStep(output);
          if (dies === 'after-checkpoint') return;
          tape.toolResult(output, opened.staging);
          await tape.complete(output);
        } finally {
          await opened.booth.close();
        }
      });
    };
    await attempt(0, 1, 'a', 'after-staging');
    await attempt(0, 2, 'a', null);
    await attempt(1, 1, 'b', 'after-checkpoint');
    await attempt(1, 2, 'b', null);
    await rec.close();

    const t = readTimeline(rec.store.pathFor(run.workflowId, run.runId));
    const appends = t.tape.frames.filter(
      (f) => f.kind === 'fs.mutation' && (f.payload as { op: string }).op === 'append',
    );
    expect(appends.map((f) => [f.step, (f.payload as { attempt: number }).attempt])).toEqual([
      [0, 1],
      [0, 2],
      [1, 1],
    ]);
    expect(t.steps.map((s) => s.staging)).toEqual([
      { attempt: 2, reused: false, discarded: 1 },
      { attempt: 1, reused: true },
    ]);
    expect(t.steps.map((s) => s.effects.filter((e) => e.kind === 'fs.mutation').length)).toEqual([5, 2]);

    // The fork, on a world seeded like the parent's: its restore is killed halfway once, then runs again.
    const forkWorld = await prepareStepWorld(path.join(tmp, 'fork'));
    const fork = boothOver(forkWorld);
    const forkRun = { workflowId: 'wf-fork', runId: 'run-1' };
    const restore = async (n: number, complete: boolean) => {
      const opened = await fork.openStep(forkRun.workflowId, forkRun.runId, {
        id: 'fork-restore:1',
        attempt: n,
      });
      try {
        if (opened.reused) return opened;
        const report = await restoreWorld(t, 2, {
          files: opened.booth.files.workspace,
          sql: await opened.booth.sql(),
        });
        if (complete) await opened.booth.completeStep(report);
        return opened;
      } finally {
        await opened.booth.close();
      }
    };
    await restore(1, false);
    expect((await restore(2, true)).staging).toEqual({ attempt: 2, reused: false, discarded: 1 });
    expect((await restore(3, true)).staging).toEqual({ attempt: 2, reused: true });

    // A live step of the fork, then its commit.
    const live = await fork.openStep(forkRun.workflowId, forkRun.runId, { id: '3', attempt: 1 });
    await live.booth.completeStep(await recordPaymentTool.run({ ref: 'c' }, { signal, booth: live.booth }));
    await live.booth.close();
    const commit = await fork.open(forkRun.workflowId, forkRun.runId);
    await commit.commitFiles();
    await commit.commitSql();
    await commit.mcp.commit();
    await commit.removeStaging();
    await commit.close();

    const world = await readWorld(forkWorld);
    // Files and SQL of the parent's two steps once each, plus the live step's; the parent's escrowed
    // notifications are not restored (docs/shadow-booth.md), the live one is sent once.
    expect(world).toEqual({ ...expectedWorld(['a', 'b', 'c']), notifications: ['payment c'] });
  });
});
