import type { GateParams } from '../../booth/verifiers';
import type { AgentBreakerOptions } from '../../breaker/config';
import type { ForkRunOptions } from '../../timetravel/fork/lineage';
import type { ContinueAsNewOptions, ContinuedRun } from './continuation';

/** Per-run knobs for the activities behind an agent's steps. Defaults suit real model APIs. */
export interface AgentRunOptions {
  /** How long one step may take, retries excluded. */
  stepTimeoutMs?: number;
  /** A worker that stops heartbeating for this long is presumed dead and the step moves to another worker. */
  heartbeatTimeoutMs?: number;
  maximumAttempts?: number;
  initialRetryIntervalMs?: number;
  /** Set by forkRun: steps before `fork.forkStep` are answered from the parent tape, later ones run live. */
  fork?: ForkRunOptions;
  /**
   * The circuit breaker of an agentWorkflow run: on by default (every model answer through the repetition
   * detectors, every step's spend through the velocity detector and the cost cap, every streamed chunk through
   * the cap; default cap DEFAULT_AGENT_CAP_USD). Overrides the agent's own `defineAgent` option; `false` runs
   * without one.
   */
  breaker?: AgentBreakerOptions | false;
  /**
   * Tools whose steps run as local activities (ctx.tool's `local` option, per call, overrides this): short
   * tools skip the server's task queues. Semantics in docs/performance.md.
   */
  localTools?: string[];
  /**
   * When the run continues as new (docs/long-runs.md): always when Temporal suggests it, and when these budgets
   * are reached. `false`: never (a run whose history passes Temporal's limits is then terminated).
   */
  continueAsNew?: ContinueAsNewOptions | false;
  /** Set by the run itself when it continues as new: what its earlier segments did. */
  continued?: ContinuedRun;
  /** Set by runExperiment: a what-if run, see ExperimentRunOptions. */
  experiment?: ExperimentRunOptions;
}

/**
 * A what-if experiment's run (docs/experiments.md). `stageOnly`: every `ctx.commit` runs its gates and then
 * discards the staged changes instead of applying them (the agent gets a report with `stagedOnly: true`), so the
 * run commits nothing. `gateParams`: per gate name, the parameters each gate is called with.
 */
export interface ExperimentRunOptions {
  stageOnly: true;
  gateParams?: GateParams;
}

/** The run key of a later segment (the first segment's run id), for the activity inputs that must name it. */
export function runKeyOf(options: Pick<AgentRunOptions, 'continued'>): string | undefined {
  return options.continued?.runKey;
}

export const DEFAULT_RUN_OPTIONS: Required<
  Omit<AgentRunOptions, 'fork' | 'breaker' | 'localTools' | 'continueAsNew' | 'continued' | 'experiment'>
> = {
  stepTimeoutMs: 5 * 60_000,
  heartbeatTimeoutMs: 30_000,
  maximumAttempts: 5,
  initialRetryIntervalMs: 1_000,
};
