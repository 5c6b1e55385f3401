/**
 * The fork workflow's first activity: creates the fork's tape with a header naming its parent (tape id, the
 * pinned prefix hash, the fork step) and the overrides, before any step records onto it, and hands the
 * workflow the parent's random and clock readings before the fork step so inherited steps see the same values.
 */
import { Context } from '@temporalio/activity';
import type { BoothRuntime } from '../../booth/shadowBooth';
import type { LlmRequest } from '../../llm/types';
import type { TapeRecorder } from '../../recorder/recorder';
import { answerInheritedLlmStep, answerInheritedToolStep } from '../../timetravel/fork/inheritedSteps';
import type {
  ForkRunOptions,
  InheritedAnswer,
  InheritedApproval,
  InheritedObservation,
  InheritedStep,
} from '../../timetravel/fork/lineage';
import { parentTimeline } from '../../timetravel/fork/parentTape';
import { digest, llmRequestForm, toolCallForm } from '../../timetravel/fork/requestDigest';
import { type RestoreReport, restoreWorld } from '../../timetravel/fork/worldRestore';
import type { Timeline } from '../../timetravel/replay/timeline';

export interface BeginForkInput {
  step: number;
  fork: ForkRunOptions;
}

/**
 * Restores the parent's staged world at the fork point into this run's Shadow Booth, exactly once: the restore
 * is a booth step of its own, so its files, SQL statements and the report become the run's staging together
 * with its checkpoint; a retried beginFork reuses that checkpoint or, after a crash halfway, throws the partial
 * restore away and replays from the start (never the parent's statements twice).
 */
async function restoreIntoBooth(
  booth: BoothRuntime,
  parent: Timeline,
  forkStep: number,
): Promise<RestoreReport | null> {
  const info = Context.current().info;
  const { workflowId, runId } = info.workflowExecution ?? { workflowId: '', runId: '' };
  const hasWorld = parent.steps.some(
    (s) => s.step < forkStep && s.effects.some((e) => e.kind === 'fs.mutation' || e.kind === 'sql.mutation'),
  );
  if (!hasWorld) return null;
  const opened = await booth.openStep(workflowId, runId, {
    id: `fork-restore:${info.activityId}`,
    attempt: info.attempt,
  });
  try {
    if (opened.reused) return opened.reused.result as RestoreReport;
    const run = opened.booth;
    const report = await restoreWorld(parent, forkStep, {
      files: run.files.workspace,
      ...(run.hasSql ? { sql: await run.sql() } : {}),
    });
    await run.completeStep({ parent: parent.tape.header.tapeId, forkStep, ...report }, { flushTape: false });
    return report;
  } finally {
    await opened.booth.close();
  }
}

export function createForkActivities(recorder: TapeRecorder | undefined, booth?: BoothRuntime) {
  return {
    async beginFork(input: BeginForkInput): Promise<{
      observations: InheritedObservation[];
      steps: InheritedAnswer[];
      tape: string | null;
      approvals: InheritedApproval[];
    }> {
      const { fork } = input;
      const parent = parentTimeline(fork.parentTape, fork.parentTapeHash, fork.forkStep);
      // The world as it was at the fork frame, before any step of the fork runs (src/timetravel/fork/worldRestore.ts).
      if (booth) await restoreIntoBooth(booth, parent, fork.forkStep);
      const observations = parent.observations
        .filter((o) => o.step < fork.forkStep)
        .map((o) => ({ kind: o.kind, value: o.value }));
      // The parent's decisions before the fork step stand: the fork does not ask again (later ones it asks).
      const approvals: InheritedApproval[] = parent.approvals.flatMap((a) =>
        a.step < fork.forkStep && a.outcome
          ? [{ id: a.id, step: a.step, kind: a.kind, outcome: a.outcome }]
          : [],
      );
      if (!recorder) return { observations, steps: [], tape: null, approvals };
      const run = recorder.runOf(Context.current().info);
      const file = recorder.store.pathFor(run.workflowId, run.runId);
      // Through the store, so the header lands where every worker of the run appends (a folder, or segment 0
      // of an object store); a retried beginFork finds the tape it created the first time and adds nothing.
      await recorder.store.withTape(run, async () => {}, {
        parent: { tapeId: fork.parentTapeId, tapeHash: fork.parentTapeHash, forkStep: fork.forkStep },
        // JSON round trip: the header may hold no undefined.
        meta: {
          fork: JSON.parse(
            JSON.stringify({
              parentTape: fork.parentTape,
              overrides: fork.overrides ?? {},
              layers: fork.layers,
            }),
          ),
        },
      });
      const steps = await recordInherited(recorder, parent, fork);
      return { observations, steps, tape: file, approvals };
    },
  };
}

/**
 * Writes every inherited step onto the fork's tape as its own llm/tool step (request, chunks, response or
 * result, effects), exactly as the step activity would, and returns what the workflow needs to answer them
 * without scheduling 'fork-step' activities: one activity for all inherited steps instead of one each.
 */
async function recordInherited(recorder: TapeRecorder, parent: Timeline, fork: ForkRunOptions) {
  const info = Context.current().info;
  const inherit: InheritedStep = {
    parentTape: fork.parentTape,
    parentTapeHash: fork.parentTapeHash,
    forkStep: fork.forkStep,
  };
  const answers: InheritedAnswer[] = [];
  for (const s of parent.steps) {
    if (s.step >= fork.forkStep) break;
    if (s.error) break; // a failed step goes through the activity, which fails the same way
    const kind = s.kind;
    const tape = recorder.forActivity(
      {
        ...info,
        activityId: `inherited-${s.step}`,
        attempt: 1,
        activityType: kind === 'llm' ? 'llmStep' : 'toolStep',
      },
      s.step,
    );
    const first = answers.length === 0 && parent.input.present ? { agentInput: parent.input.value } : {};
    if (kind === 'llm') {
      const request = s.request as unknown as LlmRequest;
      tape.start({ step: s.step, request, ...first }, []);
      const value = await answerInheritedLlmStep({ step: s.step, request, inherit }, tape);
      await tape.complete(value);
      answers.push({ step: s.step, kind, digest: digest(llmRequestForm(request)), value });
    } else {
      const name = s.toolName ?? '';
      const args = s.args ?? {};
      tape.start({ step: s.step, name, args, ...first }, []);
      const value = await answerInheritedToolStep({ step: s.step, name, args, inherit }, tape);
      await tape.complete(value);
      answers.push({ step: s.step, kind, digest: digest(toolCallForm(name, args)), value });
    }
  }
  return answers;
}

export type ForkActivities = ReturnType<typeof createForkActivities>;
