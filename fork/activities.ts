/**
 * The fork workflow's first activity: creates the fork's tape with a header naming its parent (tape id, the
 * pinned prefix hash, the fork step) and the overrides, before any step records onto it, and hands the
 * workflow the parent's random and clock readings before the fork step so inherited steps see the same values.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { withFileLock } from '../recorder/lock';
import { tapeIdFor } from '../recorder/naming';
import type { TapeRecorder } from '../recorder/recorder';
import { TapeWriter } from '../tape';
import type { ForkRunOptions, InheritedObservation } from './lineage';
import { parentTimeline } from './parentTape';

export interface BeginForkInput {
  step: number;
  fork: ForkRunOptions;
}

export function createForkActivities(recorder: TapeRecorder | undefined) {
  return {
    async beginFork(input: BeginForkInput): Promise<{ observations: InheritedObservation[]; tape: string | null }> {
      const { fork } = input;
      const parent = parentTimeline(fork.parentTape, fork.parentTapeHash, fork.forkStep);
      const observations = parent.observations
        .filter((o) => o.step < fork.forkStep)
        .map((o) => ({ kind: o.kind, value: o.value }));
      if (!recorder) return { observations, tape: null };
      const run = recorder.runOf(Context.current().info);
      const file = recorder.store.pathFor(run.workflowId, run.runId);
      await mkdir(path.dirname(file), { recursive: true });
      await withFileLock(`${file}.lock`, async () => {
        // A retried beginFork finds the header it wrote the first time.
        if (await stat(file).then(() => true, () => false)) return;
        const writer = await TapeWriter.open(file, {
          tapeId: tapeIdFor(run.workflowId, run.runId),
          createdAtMs: Date.now(),
          workflowType: run.workflowType,
          workflowId: run.workflowId,
          runId: run.runId,
          taskQueue: run.taskQueue,
          agentCodeHash: run.agentCodeHash,
          parent: { tapeId: fork.parentTapeId, tapeHash: fork.parentTapeHash, forkStep: fork.forkStep },
          // JSON round trip: the header may hold no undefined.
          meta: {
            fork: JSON.parse(
              JSON.stringify({ parentTape: fork.parentTape, overrides: fork.overrides ?? {}, layers: fork.layers }),
            ),
          },
        });
        await writer.close();
      });
      return { observations, tape: file };
    },
  };
}

export type ForkActivities = ReturnType<typeof createForkActivities>;
