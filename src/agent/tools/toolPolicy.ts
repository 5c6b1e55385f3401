/**
 * How long a tool may run and how it is retried: set on its definition, overridden per call by `ctx.tool`'s
 * options. Pure data and checks, usable in the workflow sandbox, which picks each tool step's activity options
 * from it (src/temporal/workflow/toolSteps.ts). The defaults and what they guarantee: docs/long-steps.md.
 */
import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/**
 * The retry policy entry that makes a start-to-close timeout final, as Temporal's server and Go SDK spell it: an
 * attempt that ran past its timeout is not retried (heartbeat timeouts, a dead worker, stay retried).
 */
export const TIMEOUT_IS_FINAL = 'TemporalTimeout:StartToClose';

export interface ToolRetryPolicy {
  /** Attempts in all, the first one included: 1 runs the tool once whatever happens. Default: the run's (5). */
  maximumAttempts?: number;
  /** Wait before the first retry. Default: the run's `initialRetryIntervalMs` (1 s). */
  initialIntervalMs?: number;
  /** Each later wait is the previous one times this (at least 1). Default 2. */
  backoffCoefficient?: number;
  /** Longest wait between attempts. Default: 100 x the first one (Temporal's default). */
  maximumIntervalMs?: number;
  /** Error types (an ApplicationFailure's `type`, an Error's `name`) that fail the step at once. */
  nonRetryableErrorTypes?: string[];
  /**
   * Retry an attempt that ran past `timeoutMs`. Default false: a tool slower than its timeout is never run again
   * just for being slow (it would most likely be as slow again, and a tool that acts outside the booth would act
   * twice). A worker that died mid-call is another matter: its step is always retried.
   */
  retryTimeouts?: boolean;
}

export interface ToolPolicy {
  /**
   * How long one attempt may run (Temporal's start-to-close timeout); at the deadline the attempt is over and
   * the tool's `signal` fires. Default: the run's `stepTimeoutMs` (5 minutes).
   */
  timeoutMs?: number;
  retry?: ToolRetryPolicy;
}

/** A tool definition's or a call's timeout or retry policy that cannot be applied. */
export class ToolPolicyError extends JukeboxError {
  constructor(
    readonly where: string,
    readonly field: string,
    problem: string,
  ) {
    super(
      'TOOL_POLICY_INVALID',
      `${where}: ${field} ${problem}. Fix the tool's definition or the options passed to ctx.tool (docs/long-steps.md).`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('ToolPolicyError', ToolPolicyError);

const RETRY_KEYS = [
  'maximumAttempts',
  'initialIntervalMs',
  'backoffCoefficient',
  'maximumIntervalMs',
  'nonRetryableErrorTypes',
  'retryTimeouts',
] as const;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v) : String(v));

/**
 * Checks the policy part of a tool definition or of ctx.tool's options (other keys are left to their owner) and
 * returns only that part, or undefined when it sets nothing. `where` names the tool or the call in errors.
 */
export function toolPolicyOf(
  value: { timeoutMs?: unknown; retry?: unknown },
  where: string,
): ToolPolicy | undefined {
  const fail = (field: string, problem: string): never => {
    throw new ToolPolicyError(where, field, problem);
  };
  const duration = (v: unknown, field: string, min: number): number => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min)
      fail(field, `must be a number of milliseconds >= ${min} (got ${show(v)})`);
    return v as number;
  };
  const policy: ToolPolicy = {};
  if (value.timeoutMs !== undefined) policy.timeoutMs = duration(value.timeoutMs, 'timeoutMs', 1);
  const retry = value.retry;
  if (retry !== undefined) {
    if (!isObject(retry)) return fail('retry', `must be an object (got ${show(retry)})`);
    for (const key of Object.keys(retry))
      if (!(RETRY_KEYS as readonly string[]).includes(key))
        fail(`retry.${key}`, `is not a known key (known: ${RETRY_KEYS.join(', ')})`);
    const out: ToolRetryPolicy = {};
    const attempts = retry.maximumAttempts;
    if (attempts !== undefined) {
      if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1)
        fail('retry.maximumAttempts', `must be an integer >= 1 (got ${show(attempts)})`);
      out.maximumAttempts = attempts as number;
    }
    if (retry.initialIntervalMs !== undefined)
      out.initialIntervalMs = duration(retry.initialIntervalMs, 'retry.initialIntervalMs', 1);
    if (retry.maximumIntervalMs !== undefined)
      out.maximumIntervalMs = duration(retry.maximumIntervalMs, 'retry.maximumIntervalMs', 1);
    if (retry.backoffCoefficient !== undefined) {
      const c = retry.backoffCoefficient;
      if (typeof c !== 'number' || !Number.isFinite(c) || c < 1)
        fail('retry.backoffCoefficient', `must be a number >= 1 (got ${show(c)})`);
      out.backoffCoefficient = c as number;
    }
    if (retry.nonRetryableErrorTypes !== undefined) {
      const types = retry.nonRetryableErrorTypes;
      if (!Array.isArray(types) || types.some((t) => typeof t !== 'string' || t === ''))
        fail('retry.nonRetryableErrorTypes', 'must be a list of non-empty strings');
      out.nonRetryableErrorTypes = [...(types as string[])];
    }
    if (retry.retryTimeouts !== undefined) {
      if (typeof retry.retryTimeouts !== 'boolean')
        fail('retry.retryTimeouts', `must be true or false (got ${show(retry.retryTimeouts)})`);
      out.retryTimeouts = retry.retryTimeouts as boolean;
    }
    if (
      out.initialIntervalMs !== undefined &&
      out.maximumIntervalMs !== undefined &&
      out.maximumIntervalMs < out.initialIntervalMs
    )
      fail(
        'retry.maximumIntervalMs',
        `must not be shorter than retry.initialIntervalMs (${out.initialIntervalMs})`,
      );
    policy.retry = out;
  }
  return policy.timeoutMs === undefined && policy.retry === undefined ? undefined : policy;
}

/** A call's policy over its tool's: each field the call sets wins, retry fields one by one. */
export function mergeToolPolicies(
  definition: ToolPolicy | undefined,
  call: ToolPolicy | undefined,
): ToolPolicy {
  const timeoutMs = call?.timeoutMs ?? definition?.timeoutMs;
  const retry = definition?.retry || call?.retry ? { ...definition?.retry, ...call?.retry } : undefined;
  return { ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(retry ? { retry } : {}) };
}
