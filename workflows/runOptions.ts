import type { ForkRunOptions } from '../fork/lineage';

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
}

export const DEFAULT_RUN_OPTIONS: Required<Omit<AgentRunOptions, 'fork'>> = {
  stepTimeoutMs: 5 * 60_000,
  heartbeatTimeoutMs: 30_000,
  maximumAttempts: 5,
  initialRetryIntervalMs: 1_000,
};
