/** Per-run knobs for the activities behind an agent's steps. Defaults suit real model APIs. */
export interface AgentRunOptions {
  /** How long one step may take, retries excluded. */
  stepTimeoutMs?: number;
  /** A worker that stops heartbeating for this long is presumed dead and the step moves to another worker. */
  heartbeatTimeoutMs?: number;
  maximumAttempts?: number;
  initialRetryIntervalMs?: number;
}

export const DEFAULT_RUN_OPTIONS: Required<AgentRunOptions> = {
  stepTimeoutMs: 5 * 60_000,
  heartbeatTimeoutMs: 30_000,
  maximumAttempts: 5,
  initialRetryIntervalMs: 1_000,
};
