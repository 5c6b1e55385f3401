import { type AgentBreakerOptions, resolveAgentBreakerConfig } from '../breaker/config';
import { crossRealmError, JukeboxError } from '../errors/JukeboxError';
import type { LlmRequest, LlmResponse } from '../llm/types';
import type { ApprovalOptions } from './approval';
import type { CommitOptions, CommitReport, RollbackReport } from './commit';
import type { ToolPolicy } from './tools/toolPolicy';

/**
 * The only ways an agent reaches the world. Inside Temporal each call is an activity (or a deterministic
 * workflow API); outside Temporal the same calls can be served from a tape, which is what makes replay exact.
 */
export interface AgentContext {
  /** One model call: one step. */
  llm(request: LlmRequest): Promise<LlmResponse>;
  /** One tool call: one step. The tool is looked up by name in the worker's tool registry. */
  tool<T = unknown>(name: string, args: Record<string, unknown>, options?: ToolCallOptions): Promise<T>;
  /** A random number in [0, 1), reproducible on replay. */
  random(): number;
  /** Milliseconds since the epoch, reproducible on replay. */
  now(): number;
  /**
   * Makes everything the run staged in its Shadow Booth durable, saga-style: the named gates check the change
   * set, then files, SQL and escrowed MCP calls are applied; if a part fails, the applied ones are compensated,
   * the staging is discarded and this throws CommitRolledBackError (docs/shadow-booth.md).
   */
  commit(options?: CommitOptions): Promise<CommitReport>;
  /** Discards everything the run staged and records why. */
  rollback(reason: string): Promise<RollbackReport>;
  /** Number of steps (llm and tool calls) started so far. */
  readonly steps: number;
  readonly workflowId: string;
  readonly runId: string;
}

/**
 * How one tool call runs; outside Temporal these change nothing. `timeoutMs` and `retry` override the tool
 * definition's, field by field (docs/long-steps.md).
 */
export interface ToolCallOptions extends ToolPolicy {
  /**
   * Run the step as a Temporal local activity: in the worker that runs the workflow, inside its workflow task,
   * with no round trip through the server's task queues (docs/performance.md). For short tools only: a local
   * step cannot heartbeat, runs again if its worker dies before the workflow task completes, and its retries
   * are the worker's. Default: whether the run's `localTools` option lists the tool.
   */
  local?: boolean;
  /**
   * Ask a person before the call runs (docs/approvals.md): the run waits durably, holding no worker, until
   * someone approves (possibly editing the arguments: the edited call is what runs and what the tape records),
   * rejects (the call does not run, the run's staging is rolled back, ApprovalRejectedError), or the timeout
   * passes. A tool whose definition says `approval` asks without this.
   */
  approval?: true | ToolApproval;
}

/** A tool call's approval: the wait's options and the reason shown to the person. */
export interface ToolApproval extends ApprovalOptions {
  reason?: string;
}

export type AgentFn<I, O> = (ctx: AgentContext, input: I) => Promise<O>;

export interface AgentDefinition<I, O> {
  /** Becomes the Temporal workflow type. */
  name: string;
  run: AgentFn<I, O>;
  /** The agent's circuit breaker (default: on, default cap); a run's own `breaker` option overrides it. */
  breaker?: AgentBreakerOptions | false;
}

export interface DefineAgentOptions {
  /** `{ capUsd, ...thresholds }`, checked here (BreakerConfigError), or `false` for no breaker. */
  breaker?: AgentBreakerOptions | false;
}

export function defineAgent<I, O>(
  name: string,
  run: AgentFn<I, O>,
  options: DefineAgentOptions = {},
): AgentDefinition<I, O> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new TypeError(
      `Agent name ${JSON.stringify(name)} must be an identifier: it is exported as a workflow.`,
    );
  // A bad cap fails where the agent is defined (worker start-up), not in its first run.
  if (options.breaker !== undefined && options.breaker !== false) resolveAgentBreakerConfig(options.breaker);
  return { name, run, ...(options.breaker !== undefined ? { breaker: options.breaker } : {}) };
}

export type StepKind = 'llm' | 'tool';

/** What a finished step looked like, for progress displays and summaries. */
export interface StepSummary {
  index: number;
  kind: StepKind;
  /** Model name for llm steps, tool name for tool steps. */
  name: string;
  detail: string;
  inputTokens?: number;
  outputTokens?: number;
}

export interface AgentRunResult<O> {
  output: O;
  steps: StepSummary[];
}

/** ctx.commit / ctx.rollback where no Shadow Booth can exist (a direct or offline context). */
export class BoothUnavailableError extends JukeboxError {
  constructor(where: string) {
    super(
      'BOOTH_UNAVAILABLE',
      `${where} has no Shadow Booth, so ctx.commit and ctx.rollback cannot run here; run the agent on a Jukebox worker created with a booth option`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('BoothUnavailableError', BoothUnavailableError);

/** The commit and rollback of a context without a booth: both refuse with BoothUnavailableError. */
export function boothUnavailable(where: string): Pick<AgentContext, 'commit' | 'rollback'> {
  return {
    commit: () => Promise.reject(new BoothUnavailableError(where)),
    rollback: () => Promise.reject(new BoothUnavailableError(where)),
  };
}
