/**
 * A person in the loop: what a gate, a tool call or an MCP call asks, what a person decides, and the errors a
 * run's code sees when the answer is no. Public types of the agent API; the Temporal wing
 * (src/temporal/workflow/approvalDesk.ts) makes the run wait for the decision durably.
 */

import { crossRealmError, JukeboxError } from '../errors/JukeboxError';
import type { StagedSummary } from './commit';

/** How long a run waits for a decision when the asker does not say: a day. */
export const DEFAULT_APPROVAL_TIMEOUT = '24h';

/** Per gate or per tool call: how long to wait, what a missing decision means, who may decide. */
export interface ApprovalOptions {
  /** Milliseconds, or `'90s'`, `'30m'`, `'24h'`, `'7d'`. Default DEFAULT_APPROVAL_TIMEOUT (24 hours). */
  timeout?: number | string;
  /**
   * What happens when nobody decides in time. `'rollback'` (default): like a rejection, everything the run
   * staged is rolled back through the commit's compensation path. `'refuse'`: only what asked is refused (a
   * gate's verdict becomes a refusal; a tool call does not run and throws ApprovalTimedOutError), and what the
   * run staged before stays staged.
   */
  onTimeout?: 'rollback' | 'refuse';
  /** Who may decide (the decision's `by`); anyone when absent. A decision from someone else is refused. */
  deciders?: string[];
}

export type ApprovalKind = 'commit' | 'tool' | 'mcp';

/** What a run is waiting for, as `jbx approvals`, the viewer and the client API show it. */
export interface ApprovalRequest {
  /** Unique within the run: `s<step>-<n>`, the n-th approval asked at that step. */
  id: string;
  step: number;
  kind: ApprovalKind;
  reason: string;
  /** The gates that asked (commit), or the call waiting (tool / mcp) with its arguments. */
  subject:
    | { gates: Array<{ gate: string; reason: string }> }
    | { tool: string; args: Record<string, unknown> }
    | { server: string; tool: string; args: Record<string, unknown> };
  requestedAtMs: number;
  deadlineMs: number;
  /** The timeout as the asker gave it (`'24h'`), for messages. */
  timeout: string;
  onTimeout: 'rollback' | 'refuse';
  deciders?: string[];
  /** What the run has staged while it waits (files, SQL statements, MCP calls). */
  staged?: StagedSummary;
}

/** What a client sends: a person's decision on one approval. */
export interface ApprovalDecisionInput {
  /** The approval decided (`ApprovalRequest.id`): a decision meant for one ask is never taken for another. */
  approvalId: string;
  verdict: 'approve' | 'reject';
  /** Who decides: checked against the approval's `deciders`, recorded on the tape. */
  by: string;
  /** Why (required to reject), or a note with an approval. */
  note?: string;
  /** Edited arguments of the tool or MCP call: what runs instead of the arguments it asked with. */
  args?: Record<string, unknown>;
  /**
   * The decision's idempotency key (the Temporal update id, the signal's dedup key): the same decision sent
   * twice has one effect. Default: derived from the other fields.
   */
  decisionId?: string;
}

/** A decision as the run took it. */
export interface ApprovalDecision {
  approvalId: string;
  decisionId: string;
  verdict: 'approve' | 'reject';
  by: string;
  /** The workflow's clock when the run took it. */
  atMs: number;
  note?: string;
  args?: Record<string, unknown>;
  /** Whether it arrived as a Temporal update (a worker was there to validate it) or a signal (none was). */
  via: 'update' | 'signal';
}

/** How an approval ended, kept with what it decided (CommitReport.approval, errors, `jbx approvals`). */
export type ApprovalOutcome =
  | ({ outcome: 'approved' } & ApprovalDecision)
  | ({ outcome: 'rejected' } & ApprovalDecision)
  | { outcome: 'timedOut'; approvalId: string; atMs: number; onTimeout: 'rollback' | 'refuse' };

/** What waits, in words: `the call of tool X`, `the MCP call S/T`, `the commit`. */
export function approvalSubjectText(
  kind: ApprovalKind,
  subject: ApprovalRequest['subject'] | undefined,
): string {
  const s = (subject ?? {}) as { server?: string; tool?: string };
  if (kind === 'commit') return 'the commit';
  return kind === 'mcp' ? `the MCP call ${s.server}/${s.tool}` : `the call of tool ${s.tool}`;
}

/** A person rejected the tool or MCP call: it did not run, and what the run had staged was rolled back. */
export class ApprovalRejectedError extends JukeboxError {
  readonly decision: ApprovalDecision;
  constructor(what: string, decision: ApprovalDecision) {
    super(
      'APPROVAL_REJECTED',
      `${what} was rejected by ${decision.by}${decision.note ? `: ${decision.note}` : ''}; it did not run, and what the run had staged was rolled back`,
      { nonRetryable: true },
    );
    this.decision = decision;
  }
}
crossRealmError('ApprovalRejectedError', ApprovalRejectedError);

/** Nobody decided in time. With `onTimeout: 'rollback'` the run's staging was rolled back too. */
export class ApprovalTimedOutError extends JukeboxError {
  readonly onTimeout: 'rollback' | 'refuse';
  constructor(what: string, timeout: string, onTimeout: 'rollback' | 'refuse') {
    super(
      'APPROVAL_TIMED_OUT',
      `nobody decided on ${what} within ${timeout}; it did not run${onTimeout === 'rollback' ? ', and what the run had staged was rolled back' : ' (what the run staged before stays staged)'}`,
      { nonRetryable: true },
    );
    this.onTimeout = onTimeout;
  }
}
crossRealmError('ApprovalTimedOutError', ApprovalTimedOutError);

/** An approval option that cannot be enforced (an unreadable timeout, an unknown onTimeout). */
export class ApprovalOptionsError extends JukeboxError {
  constructor(problem: string) {
    super('APPROVAL_OPTIONS_INVALID', `approval options: ${problem}`, { nonRetryable: true });
  }
}
crossRealmError('ApprovalOptionsError', ApprovalOptionsError);

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A timeout in milliseconds: a positive number, or a number with a unit (`ms`, `s`, `m`, `h`, `d`). */
export function timeoutMs(timeout: number | string | undefined): number {
  const t = timeout ?? DEFAULT_APPROVAL_TIMEOUT;
  if (typeof t === 'number') {
    if (Number.isFinite(t) && t > 0) return t;
  } else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(t);
    if (m) return Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  throw new ApprovalOptionsError(
    `timeout ${JSON.stringify(t)} is not a positive duration; give milliseconds or e.g. '90s', '30m', '24h', '7d'`,
  );
}

/** The options with their defaults, checked: a bad option fails where the run asks, naming what to fix. */
export function resolveApprovalOptions(o: ApprovalOptions | true | undefined): {
  timeoutMs: number;
  timeout: string;
  onTimeout: 'rollback' | 'refuse';
  deciders?: string[];
} {
  const options = o === true || o === undefined ? {} : o;
  const onTimeout = options.onTimeout ?? 'rollback';
  if (onTimeout !== 'rollback' && onTimeout !== 'refuse')
    throw new ApprovalOptionsError(
      `onTimeout ${JSON.stringify(onTimeout)} is neither 'rollback' nor 'refuse'`,
    );
  if (
    options.deciders !== undefined &&
    (!Array.isArray(options.deciders) || options.deciders.some((d) => typeof d !== 'string' || d === ''))
  )
    throw new ApprovalOptionsError('deciders must be a list of non-empty names');
  const ms = timeoutMs(options.timeout);
  return {
    timeoutMs: ms,
    timeout: typeof options.timeout === 'string' ? options.timeout.trim() : formatMs(ms),
    onTimeout,
    ...(options.deciders ? { deciders: [...options.deciders] } : {}),
  };
}

function formatMs(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}
