/**
 * Deciding from outside a run (docs/approvals.md): which runs wait for a person, and approve / reject. What a
 * run waits for is read from its memo (DescribeWorkflowExecution, ListWorkflowExecutions), which needs no worker;
 * the decision goes as a Temporal update when a worker takes it within `acceptWithinMs` (its validator's refusal
 * comes back as a typed error), else as a signal, which the server keeps in the run's history until a worker
 * picks the run up.
 */

import {
  type Client,
  isGrpcServiceError,
  type WorkflowClient,
  type WorkflowHandle,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { decodeOptionalSinglePayload } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
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
  /** The run to decide on; default the handle's first run, else the workflow's latest. */
  runId?: string;
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

type RawExecution = temporal.api.workflow.v1.IWorkflowExecutionInfo;

/** A run as this module reads it: its ids and status, and the two memo fields of its approvals. */
interface RunState {
  workflowId: string;
  runId: string;
  workflowType: string;
  taskQueue: string;
  status: string;
  closeTime: Date | null;
  pending: PendingApproval | null;
  last: ApprovalOutcome | undefined;
}

const STATUS = temporal.api.enums.v1.WorkflowExecutionStatus;
/** gRPC's NOT_FOUND status code. */
const GRPC_NOT_FOUND = 5;

/**
 * Decodes only this module's memo fields, from the raw execution info: the run's other payloads (its input,
 * another plugin's memo, content a worker stored by reference) are not this module's to read, and a client
 * without the codecs or the external storage they need must still see who waits for a person.
 */
async function runStateOf(workflow: WorkflowClient, raw: RawExecution): Promise<RunState | null> {
  const fields = raw.memo?.fields ?? {};
  const converter = workflow.options.loadedDataConverter;
  const read = async <T>(key: string): Promise<T | undefined> => {
    const payload = fields[key];
    if (!payload) return undefined;
    try {
      return (await decodeOptionalSinglePayload<T>(converter, payload)) ?? undefined;
    } catch {
      return undefined;
    }
  };
  const workflowId = raw.execution?.workflowId;
  const runId = raw.execution?.runId;
  if (!workflowId || !runId) return null;
  const ids = { workflowId, runId, workflowType: raw.type?.name ?? '', taskQueue: raw.taskQueue ?? '' };
  const p = await read<ApprovalRequest & { taskQueue?: string }>(APPROVAL_MEMO);
  const status = raw.status ?? STATUS.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED;
  const close = raw.closeTime?.seconds;
  return {
    ...ids,
    status: (STATUS[status] ?? 'UNSPECIFIED').replace('WORKFLOW_EXECUTION_STATUS_', ''),
    closeTime: close != null ? new Date(Number(close) * 1000) : null,
    // A run that ended while it waited (cancelled, terminated, timed out) keeps the request in its memo, but
    // nobody can decide it any more.
    pending:
      status === STATUS.WORKFLOW_EXECUTION_STATUS_RUNNING &&
      p &&
      typeof p === 'object' &&
      typeof p.id === 'string'
        ? { ...p, ...ids, taskQueue: p.taskQueue ?? ids.taskQueue }
        : null,
    last: await read<ApprovalOutcome>(APPROVAL_LAST_MEMO),
  };
}

async function describeRun(workflow: WorkflowClient, workflowId: string, runId?: string): Promise<RunState> {
  let raw: temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse;
  try {
    raw = await workflow.workflowService.describeWorkflowExecution({
      namespace: workflow.options.namespace,
      execution: { workflowId, ...(runId ? { runId } : {}) },
    });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND)
      throw new ApprovalNotPendingError(
        `no workflow ${workflowId}${runId ? ` run ${runId}` : ''} on this Temporal server (namespace ${workflow.options.namespace}); check the id with \`jbx approvals\``,
        err,
      );
    throw err;
  }
  const state = raw.workflowExecutionInfo ? await runStateOf(workflow, raw.workflowExecutionInfo) : null;
  if (!state)
    throw new ApprovalNotPendingError(`the server described workflow ${workflowId} without its ids`);
  return state;
}

/** The run a handle names: the one it started, else the workflow's latest. */
function runIdOf(handle: AnyHandle, runId?: string): string | undefined {
  return runId ?? (handle as { firstExecutionRunId?: string }).firstExecutionRunId;
}

/** The approval this run waits for now, or null. Reads the run's memo: no worker needed. */
export async function pendingApproval(handle: AnyHandle): Promise<PendingApproval | null> {
  return (await describeRun(handle.client, handle.workflowId, runIdOf(handle))).pending;
}

/** Every running workflow of the namespace that waits for a person, oldest request first. */
export async function listApprovals(
  client: Client | WorkflowClient,
  options: { workflowType?: string } = {},
): Promise<PendingApproval[]> {
  const workflow = 'workflow' in client ? client.workflow : client;
  const query = `ExecutionStatus = "Running"${options.workflowType ? ` AND WorkflowType = "${options.workflowType.replace(/"/g, '')}"` : ''}`;
  const out: PendingApproval[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await workflow.workflowService.listWorkflowExecutions({
      namespace: workflow.options.namespace,
      query,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const raw of page.executions ?? []) {
      const p = (await runStateOf(workflow, raw))?.pending;
      if (p) out.push(p);
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
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
    const run = await describeRun(handle.client, handle.workflowId, runIdOf(handle));
    if (run.pending) return run.pending;
    if (run.status !== 'RUNNING')
      throw new ApprovalNotPendingError(
        `workflow ${run.workflowId} run ${run.runId} ended (${run.status}) with no decision to wait for`,
      );
    if (Date.now() > deadline)
      throw new ApprovalNotPendingError(
        `workflow ${run.workflowId} run ${run.runId} did not ask for a decision within ${options.timeoutMs ?? 60_000} ms`,
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
  const state = await describeRun(handle.client, handle.workflowId, runIdOf(handle, options.runId));
  const ids = { workflowId: state.workflowId, runId: state.runId };
  const last = state.last;
  const run = `workflow ${ids.workflowId} run ${ids.runId}`;
  if (state.status !== 'RUNNING')
    throw new ApprovalNotPendingError(
      `${run} already ended (${state.status}${state.closeTime ? ` at ${state.closeTime.toISOString()}` : ''})${describeOutcome(last)}; there is nothing to decide`,
    );
  const pending = state.pending;
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
