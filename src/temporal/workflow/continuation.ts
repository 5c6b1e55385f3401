/**
 * Continue-as-new without the agent author's help (docs/long-runs.md). A run's history grows with its steps, and
 * Temporal ends a run whose history passes its limits; so when Temporal suggests it, or the run's own budget is
 * reached, the agent workflow continues as new between two steps. The new execution (a segment) runs the agent
 * function again from the top: every step the run had taken is answered from what the run carried over (as a
 * fork answers its inherited steps, with no activity), every random and clock reading too, and the first step
 * after that goes live. The breaker's windows and spend and the approvals decided carry over; the Shadow Booth's
 * staging and the tape stay where they are, under the run's first execution's run id (the run key), which every
 * activity input of a later segment names.
 *
 * Deterministic and free of Node APIs: this runs in the workflow sandbox.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { CommitReport, RollbackReport } from '../../agent/commit';
import type { LlmResponse } from '../../llm/types';
import type { RecordSegmentInput } from '../../recorder/observations';
import type { ApprovalState } from './approvalMessages';
import type { CarriedError } from './carriedErrors';
import type { WorkflowBreakerState } from './workflowBreaker';

/** When a run continues as new, besides when Temporal suggests it (`continueAsNewSuggested`). */
export interface ContinueAsNewOptions {
  /** After this many steps in one segment. */
  everySteps?: number;
  /** When the segment's history reaches this many bytes (default 40 MiB, under Temporal's 50 MB limit). */
  historyBytes?: number;
  /** When it reaches this many events (default 40,000, under Temporal's 51,200). */
  historyEvents?: number;
}

export const DEFAULT_CONTINUE_AS_NEW: Required<Omit<ContinueAsNewOptions, 'everySteps'>> = {
  historyBytes: 40 * 1024 * 1024,
  historyEvents: 40_000,
};

/** One step as the agent saw it: its answer, or the error it threw. `trip` is a breaker trip's record step. */
export type CarriedStep =
  | { k: 'llm'; v: LlmResponse }
  /** A model call the cost cap cut short, resumed by a person: the same call went out again as the next step. */
  | { k: 'llm'; resumed: true }
  | { k: 'tool'; v: unknown }
  | { k: 'commit'; v: CommitReport }
  | { k: 'rollback'; v: RollbackReport }
  | { k: 'trip' }
  | { k: 'llm' | 'tool' | 'commit' | 'rollback' | 'trip'; e: CarriedError };

/** A random (`r`) or clock (`c`) reading, in the order the agent read them. */
export type CarriedReading = ['r' | 'c', number];

/** What a segment hands the next one, in its continue-as-new input (AgentRunOptions.continued). */
export interface ContinuedRun {
  /** The run id of the run's first segment: its tape and staging live under it. */
  runKey: string;
  /** This segment's number (1 for the first continuation). */
  segment: number;
  /** Steps before this one are answered from `steps`; it is the first live one. */
  atStep: number;
  /** Every step so far, a list per segment (each list is stored once in the content store). */
  steps: CarriedStep[][];
  /** Every reading so far, a list per segment. */
  readings: CarriedReading[][];
  breaker?: WorkflowBreakerState;
  approvals?: Omit<ApprovalState, 'pending'>;
}

/**
 * What an earlier segment did differs from what the agent does now: its code changed in between. A plain Error,
 * so it fails the workflow task (as Temporal's own nondeterminism does) and the run waits for code that replays.
 */
export class ContinuationDivergedError extends Error {
  constructor(what: string) {
    super(
      `${what}: the agent code changed in a way that does not replay the run's earlier segments; deploy the code that ran them, or start the run again`,
    );
    this.name = 'ContinuationDivergedError';
  }
}

const stepKind = (k: string) => (k === 'trip' ? 'breaker trip' : k);

export class Continuation {
  readonly runKey: string | undefined;
  readonly segment: number;
  readonly atStep: number;
  private readonly answers: CarriedStep[];
  private readonly carriedReadings: CarriedReading[];
  private nextReading = 0;
  private readonly steps: CarriedStep[] = [];
  private readonly readings: CarriedReading[] = [];
  private readonly budget: Required<Omit<ContinueAsNewOptions, 'everySteps'>> & { everySteps?: number };

  constructor(
    private readonly carried: ContinuedRun | undefined,
    options: ContinueAsNewOptions | false | undefined,
    /** False for runs that may not continue (the option says so, or a history from before this existed). */
    readonly enabled: boolean,
  ) {
    this.runKey = carried?.runKey;
    this.segment = carried?.segment ?? 0;
    this.atStep = carried?.atStep ?? 0;
    this.answers = carried ? carried.steps.flat() : [];
    this.carriedReadings = carried ? carried.readings.flat() : [];
    this.budget = { ...DEFAULT_CONTINUE_AS_NEW, ...(options || {}) };
  }

  /** The earlier segment's answer for `step`, checked to be of the kind the agent asks now. */
  answer(step: number, kind: CarriedStep['k']): CarriedStep | undefined {
    if (step >= this.atStep) return undefined;
    const a = this.answers[step];
    if (a?.k !== kind)
      throw new ContinuationDivergedError(
        `step ${step} was ${a ? `a ${stepKind(a.k)} step` : 'not taken'} in an earlier segment of this run, and the agent now makes it a ${stepKind(kind)} step`,
      );
    return a;
  }

  /** Whether `step` was a breaker trip's record step in an earlier segment. */
  isCarriedTrip(step: number): boolean {
    return step < this.atStep && this.answers[step]?.k === 'trip';
  }

  /** The next reading an earlier segment made, or undefined once they are all read again. */
  reading(kind: 'r' | 'c'): number | undefined {
    const r = this.carriedReadings[this.nextReading];
    if (!r) return undefined;
    const name = (k: 'r' | 'c') => (k === 'r' ? 'ctx.random()' : 'ctx.now()');
    if (r[0] !== kind)
      throw new ContinuationDivergedError(
        `reading ${this.nextReading} of this run was ${name(r[0])} in an earlier segment, and the agent now calls ${name(kind)}`,
      );
    this.nextReading++;
    return r[1];
  }

  /** A live step's answer, carried into the next segment if there is one. */
  record(step: number, answer: CarriedStep): void {
    this.steps[step - this.atStep] = answer;
  }

  recordReading(kind: 'r' | 'c', value: number): void {
    this.readings.push([kind, value]);
  }

  /** Why the run should continue as new before step `started`, or undefined. */
  due(started: number): RecordSegmentInput['reason'] | undefined {
    // A segment always makes progress, and never continues while it answers carried steps.
    if (!this.enabled || started <= this.atStep) return undefined;
    const info = workflowInfo();
    if (this.budget.everySteps !== undefined && started - this.atStep >= this.budget.everySteps)
      return 'steps';
    if (info.historySize >= this.budget.historyBytes) return 'history-bytes';
    if (info.historyLength >= this.budget.historyEvents) return 'history-events';
    if (info.continueAsNewSuggested) return 'suggested';
    return undefined;
  }

  /** The next segment's input: everything carried so far plus this segment's steps and readings. */
  next(started: number, runKey: string, state: Pick<ContinuedRun, 'breaker' | 'approvals'>): ContinuedRun {
    const steps = this.steps.slice(0, started - this.atStep);
    // A step that never answered (one in flight cannot be: the run continues only between steps).
    for (let i = 0; i < steps.length; i++)
      if (!steps[i])
        throw new Error(
          `step ${this.atStep + i} has no answer to carry: the run cannot continue between steps`,
        );
    return {
      runKey,
      segment: this.segment + 1,
      atStep: started,
      steps: [...(this.carried?.steps ?? []), steps],
      readings: [...(this.carried?.readings ?? []), this.readings],
      ...(state.breaker ? { breaker: state.breaker } : {}),
      ...(state.approvals ? { approvals: state.approvals } : {}),
    };
  }
}
