/**
 * A fork's link to its parent, as it travels in the fork workflow's run options and into the step activities.
 * Types only: the workflow bundle imports them.
 */
import type { ApprovalKind, ApprovalOutcome } from '../../agent/approval';
import type { ForkOverrides, OverrideLayer } from './overrides';

export interface ForkRunOptions {
  /** Path of the parent tape, as the worker sees it. */
  parentTape: string;
  parentTapeId: string;
  /** Chain value after the last parent frame the fork inherits (FORMAT.md, `parent.tapeHash`). */
  parentTapeHash: string;
  /** Steps before this one are answered from the parent tape; it and later steps run live. */
  forkStep: number;
  /** What this fork changes, from forkStep on. */
  overrides?: ForkOverrides;
  /**
   * Every override in force, ancestors' first: a fork of a fork must send its inherited steps exactly as its
   * parent (itself a fork) sent them.
   */
  layers: OverrideLayer[];
}

/** On a step activity's input: answer this step from the parent tape instead of going live. */
export interface InheritedStep {
  parentTape: string;
  parentTapeHash: string;
  forkStep: number;
}

/** A random or clock reading of the parent before the fork step, handed back to the fork workflow. */
export interface InheritedObservation {
  kind: 'random' | 'clock';
  value: number;
}

/**
 * A parent step the fork workflow may answer itself, without an activity, when its request digests the same
 * (src/timetravel/fork/requestDigest.ts). Failed parent steps are not offered: they go through the step activity.
 */
export interface InheritedAnswer {
  step: number;
  kind: 'llm' | 'tool';
  digest: string;
  /** The LlmResponse, or the tool's output. */
  value: unknown;
}

/** A decision of the parent run before the fork step: the fork takes it over instead of asking again. */
export interface InheritedApproval {
  id: string;
  step: number;
  kind: ApprovalKind;
  outcome: ApprovalOutcome;
}
