/**
 * Deciding from outside a run (docs/approvals.md): which runs wait for a person, and approve / reject. What a
 * run waits for is read from its memo (DescribeWorkflowExecution, ListWorkflowExecutions), which needs no worker;
 * the decision goes as a Temporal update when a worker takes it within `acceptWithinMs` (its validator's refusal
 * comes back as a typed error), else as a signal, which the server keeps in the run's history until a worker
 * picks the run up.
 */
import {
  type Client,
  type WorkflowClient,
  type WorkflowHandle,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import type { ApprovalDecisionInput, ApprovalOutcome, ApprovalRequest } from '../../agent/approval';
import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';
import {
  APPROVAL_LAST_MEMO,
  APPROVAL_MEMO,
  DECIDER_REFUSED,
  DECISION_INVALID,
  type DecisionReceipt,
  decideUpdate,
  decisionSignal,
  defaultDecisionId,
  NOT_PENDING,
} from '../workflow/approvalMessages';

/** A run waiting for a person, as listed: the request, and which run it is. */
export interface PendingApproval extends ApprovalRequest {
  workflowId: string;
  runId: string;
  workflowType: string;
  taskQueue: string;
  /** Files, SQL statements and MCP calls beyond the listing's cap (the tape holds them all). */
  staged?: ApprovalRequest['staged'] & { more?: number };
}

/** The run is not waiting for this decision: it finished, its approval timed out or was decided, or it never asked. */
export class ApprovalNotPendingError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('APPROVAL_NOT_PENDING', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ApprovalNotPendingError', ApprovalNotPendingError);

/** The approval's `deciders` do not name who tried to decide. */
export class ApprovalDeciderRefusedError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('APPROVAL_DECIDER_REFUSED', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ApprovalDeciderRefusedError', ApprovalDeciderRefusedError);

/** The decision itself is unusable (no reason for a rejection, arguments for a commit, ...). */
export class ApprovalDecisionInvalidError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('APPROVAL_DECISION_INVALID', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ApprovalDecisionInvalidError', ApprovalDecisionInvalidError);

// biome-ignore lint/suspicious/noExplicitAny: any agent workflow; only its memo and handlers are used
type AnyHandle = WorkflowHandle<any>;

export interface DecideOptions {
  by: string;
  note?: string;
  /** Edited arguments of a tool or MCP call (approve only). */
  args?: Record<string, unknown>;
  /** The approval meant (from a listing); default the one the run waits for now. */
  approvalId?: string;
  /** Idempotency key; default derived from the approval, the verdict and who decides. */
  decisionId?: string;
  /**
   * How long a worker has to take the decision as an update before it goes as a signal instead (default 10 s):
   * with no worker running, an update waits for one, and the server would not keep it across its own restart.
   */
  acceptWithinMs?: number;
}

export interface DecisionResult {
  workflowId: string;
  runId: string;
  approval: PendingApproval;
  decisionId: string;
  /** `update`: a worker validated and took it. `signal`: it is in the run's history; a worker takes it when it runs. */
  via: 'update' | 'signal';
  /** The run had already taken this very decision (sent before): nothing new happened. */
  duplicate: boolean;
  receipt: DecisionReceipt | null;
}

function describeOutcome(last: ApprovalOutcome | undefined): string {
  if (!last) return '';
  const at = new Date(last.atMs).toISOString();
  return last.outcome === 'timedOut'
    ? `; its approval ${last.approvalId} timed out at ${at} (onTimeout ${last.onTimeout})`
    : `; its approval ${last.approvalId} was ${last.outcome} by ${last.by} at ${at}`;
}

function pendingOf(
  memo: Record<string, unknown> | undefined,
  ids: { workflowId: string; runId: string; workflowType: string; taskQueue: string },
): PendingApproval | null {
  const p = memo?.[APPROVAL_MEMO] as (ApprovalRequest & { taskQueue?: string }) | undefined;
  if (!p || typeof p !== 'object' || typeof p.id !== 'string') return null;
  return { ...p, ...ids, taskQueue: p.taskQueue ?? ids.taskQueue };
}

/** The approval this run waits for now, or null. Reads the run's memo: no worker needed. */
export async function pendingApproval(handle: AnyHandle): Promise<PendingApproval | null> {
  const d = await handle.describe();
  return pendingOf(d.memo, {
    workflowId: d.workflowId,
    runId: d.runId,
    workflowType: d.type,
    taskQueue: d.taskQueue,
  });
}

/** Every running workflow of the namespace that waits for a person, oldest request first. */
export async function listApprovals(
  client: Client | WorkflowClient,
  options: { workflowType?: string } = {},
): Promise<PendingApproval[]> {
  const workflow = 'workflow' in client ? client.workflow : client;
  const query = `ExecutionStatus = "Running"${options.workflowType ? ` AND WorkflowType = "${options.workflowType.replace(/"/g, '')}"` : ''}`;
  const out: PendingApproval[] = [];
  for await (const w of workflow.list({ query })) {
    const p = pendingOf(w.memo, {
      workflowId: w.workflowId,
      runId: w.runId,
      workflowType: w.type,
      taskQueue: w.taskQueue,
    });
    if (p) out.push(p);
  }
  return out.sort((a, b) => a.requestedAtMs - b.requestedAtMs);
}

/**
 * Waits until the run asks for a decision (polling its memo every `pollMs`), for clients that start a run and
 * then decide on it. Throws ApprovalNotPendingError when the run finishes without asking.
 */
export async function waitForApproval(
  handle: AnyHandle,
  options: { timeoutMs?: number; pollMs?: number } = {},
): Promise<PendingApproval> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const d = await handle.describe();
    const p = pendingOf(d.memo, {
      workflowId: d.workflowId,
      runId: d.runId,
      workflowType: d.type,
      taskQueue: d.taskQueue,
    });
    if (p) return p;
    if (d.status.name !== 'RUNNING')
      throw new ApprovalNotPendingError(
        `workflow ${d.workflowId} run ${d.runId} ended (${d.status.name}) without asking for a decision`,
      );
    if (Date.now() > deadline)
      throw new ApprovalNotPendingError(
        `workflow ${d.workflowId} run ${d.runId} did not ask for a decision within ${options.timeoutMs ?? 60_000} ms`,
      );
    await new Promise((r) => setTimeout(r, options.pollMs ?? 200));
  }
}

function typedRefusal(err: unknown): Error | null {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure)) return null;
  if (cause.type === NOT_PENDING) return new ApprovalNotPendingError(cause.message, err);
  if (cause.type === DECIDER_REFUSED) return new ApprovalDeciderRefusedError(cause.message, err);
  if (cause.type === DECISION_INVALID) return new ApprovalDecisionInvalidError(cause.message, err);
  return null;
}

const isFinished = (err: unknown) =>
  err instanceof WorkflowNotFoundError ||
  /already completed|workflow execution.*(completed|closed|finished)|not found/i.test(
    String((err as Error)?.message),
  );

async function decide(
  handle: AnyHandle,
  verdict: 'approve' | 'reject',
  options: DecideOptions,
): Promise<DecisionResult> {
  let description: Awaited<ReturnType<AnyHandle['describe']>>;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new ApprovalNotPendingError(
        `no workflow ${handle.workflowId} on this Temporal server (namespace ${handle.client.options.namespace}); check the id with \`jbx approvals\``,
        err,
      );
    throw err;
  }
  const ids = {
    workflowId: description.workflowId,
    runId: description.runId,
    workflowType: description.type,
    taskQueue: description.taskQueue,
  };
  const last = description.memo?.[APPROVAL_LAST_MEMO] as ApprovalOutcome | undefined;
  const run = `workflow ${ids.workflowId} run ${ids.runId}`;
  if (description.status.name !== 'RUNNING')
    throw new ApprovalNotPendingError(
      `${run} already ended (${description.status.name}${description.closeTime ? ` at ${description.closeTime.toISOString()}` : ''})${describeOutcome(last)}; there is nothing to decide`,
    );
  const pending = pendingOf(description.memo, ids);
  if (!pending)
    throw new ApprovalNotPendingError(`${run} is not waiting for an approval${describeOutcome(last)}`);
  if (options.approvalId !== undefined && options.approvalId !== pending.id)
    throw new ApprovalNotPendingError(
      `${run} is not waiting for approval ${options.approvalId}; it waits for ${pending.id} (${pending.reason})`,
    );
  if (pending.deciders && !pending.deciders.includes(options.by))
    throw new ApprovalDeciderRefusedError(
      `${options.by} may not decide approval ${pending.id} of ${run}; its deciders are ${pending.deciders.join(', ')}`,
    );
  const input: ApprovalDecisionInput = {
    approvalId: pending.id,
    verdict,
    by: options.by,
    ...(options.note !== undefined ? { note: options.note } : {}),
    ...(options.args !== undefined ? { args: options.args } : {}),
  };
  const decisionId = options.decisionId ?? defaultDecisionId(input);
  input.decisionId = decisionId;
  const result = { workflowId: ids.workflowId, runId: ids.runId, approval: pending, decisionId };
  // The handle of this very run: a decision must never reach a later run of the same workflow id.
  const target = handle.client.getHandle(ids.workflowId, ids.runId);
  try {
    const receipt = await handle.client.withDeadline(Date.now() + (options.acceptWithinMs ?? 10_000), () =>
      target.executeUpdate(decideUpdate, { args: [input], updateId: decisionId }),
    );
    return { ...result, via: 'update', duplicate: receipt.duplicate, receipt };
  } catch (err) {
    const refusal = typedRefusal(err);
    if (refusal) throw refusal;
    if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) {
      if (isFinished(err)) throw new ApprovalNotPendingError(`${run} ended before it took the decision`, err);
      throw err;
    }
  }
  // No worker took it in time: the signal is in the run's history once this returns, whatever happens next.
  try {
    await target.signal(decisionSignal, input);
  } catch (err) {
    if (isFinished(err)) throw new ApprovalNotPendingError(`${run} ended before it took the decision`, err);
    throw err;
  }
  return { ...result, via: 'signal', duplicate: false, receipt: null };
}

/** Approves what the run waits for (`args`: the person's edit of a tool or MCP call). */
export function approve(handle: AnyHandle, options: DecideOptions): Promise<DecisionResult> {
  return decide(handle, 'approve', options);
}

/** Rejects what the run waits for; `note` is the reason, and required. */
export async function reject(
  handle: AnyHandle,
  options: Omit<DecideOptions, 'args' | 'note'> & { reason: string },
): Promise<DecisionResult> {
  const { reason, ...rest } = options;
  if (!reason?.trim()) throw new ApprovalDecisionInvalidError('a rejection needs a reason');
  return decide(handle, 'reject', { ...rest, note: reason });
}
