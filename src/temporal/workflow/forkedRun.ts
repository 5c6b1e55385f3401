/**
 * The fork side of the agent workflow, deterministic and I/O-free (it runs in the workflow sandbox): which
 * steps are inherited from the parent tape, the overrides for the live ones, and the parent's random/clock
 * readings replayed to inherited steps. For a run that is not a fork everything passes through.
 */
import type { LlmRequest } from '../../llm/types';
import type {
  ForkRunOptions,
  InheritedAnswer,
  InheritedApproval,
  InheritedObservation,
  InheritedStep,
} from '../../timetravel/fork/lineage';
import { applyLayers } from '../../timetravel/fork/overrides';
import { digest } from '../../timetravel/fork/requestDigest';
import type { ForkActivities } from '../activities/forkActivities';

export interface ForkedRun {
  /** The request as sent: with the overrides from the fork step on. */
  request(step: number, request: LlmRequest): LlmRequest;
  /** Extra fields of a step activity's input: `inherit` before the fork step, the run input on the first step. */
  stepInput(step: number): { inherit?: InheritedStep; agentInput?: unknown };
  /** The parent's reading for an inherited step, or undefined to read the live one. */
  observe(kind: 'random' | 'clock', step: number): number | undefined;
  /**
   * The parent's answer for an inherited step whose request (llmRequestForm / toolCallForm) digests as the
   * parent's did; undefined means: run the step activity.
   */
  answer(step: number, form: unknown): unknown;
  /** The parent's decision on approval `id` (asked before the fork step), taken over without asking. */
  approval(id: string): InheritedApproval | undefined;
  /** The parent tape's id, for the record of a decision taken over. */
  readonly parentTapeId?: string;
}

/**
 * `continued`: a later segment of a run that continued as new. Its first segment already began the fork and put
 * the run's input on the tape, and every step before the segment is answered from what the run carried; only the
 * fork's overrides still apply.
 */
export async function forkedRun(
  fork: ForkRunOptions | undefined,
  activities: Pick<ForkActivities, 'beginFork'>,
  input: unknown,
  continued = false,
): Promise<ForkedRun> {
  let inputSent = continued;
  const first = () => {
    if (inputSent) return {};
    inputSent = true;
    return { agentInput: input };
  };
  if (!fork || continued)
    return {
      request: fork
        ? (step, request) => applyLayers(request, step, fork.layers)
        : (_step, request) => request,
      stepInput: () => first(),
      observe: () => undefined,
      answer: () => undefined,
      approval: () => undefined,
    };
  const { observations, steps, approvals } = await activities.beginFork({ step: fork.forkStep, fork });
  // Histories recorded before approvals existed return none.
  const decided = new Map<string, InheritedApproval>((approvals ?? []).map((a) => [a.id, a]));
  const answers = new Map<number, InheritedAnswer>(steps.map((a) => [a.step, a]));
  const queue: InheritedObservation[] = [...observations];
  const inherit: InheritedStep = {
    parentTape: fork.parentTape,
    parentTapeHash: fork.parentTapeHash,
    forkStep: fork.forkStep,
  };
  return {
    request: (step, request) => applyLayers(request, step, fork.layers),
    stepInput: (step) => ({ ...first(), ...(step < fork.forkStep ? { inherit } : {}) }),
    observe(kind, step) {
      if (step >= fork.forkStep || queue[0]?.kind !== kind) return undefined;
      return queue.shift()!.value;
    },
    approval: (id) => decided.get(id),
    parentTapeId: fork.parentTapeId,
    answer(step, form) {
      const a = answers.get(step);
      if (!a || a.digest !== digest(form)) return undefined;
      answers.delete(step);
      return a.value;
    },
  };
}
