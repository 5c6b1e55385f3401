/**
 * Where a run waits for a person (docs/approvals.md). Deterministic workflow code: asking records the request
 * (an activity), publishes it in the run's memo (so `jbx approvals` finds it without a worker), then waits on a
 * workflow condition with a timer for the deadline. While it waits no activity runs and no worker slot is held:
 * the worker may evict the run from its cache, crash, or be gone; the server keeps the timer.
 *
 * A decision arrives as the update `jukebox.approval.decide` when a worker is there to validate it (the
 * validator refuses a decision for an approval the run is not waiting for, or from someone the approval's
 * `deciders` do not name, and the client gets that error back), or as the signal `jukebox.approval.decision`
 * when none is: a signal is durable in the run's history the moment the server takes it, and is validated by
 * the same rules when a worker picks the run up (a refused one changes nothing and is listed by the query).
 * Both carry a decision id: the update id is that id (Temporal deduplicates it), and the run takes each id once,
 * whichever way it came, so the same decision sent twice, or by both ways, has one effect.
 */
import {
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setHandler,
  upsertMemo,
} from '@temporalio/workflow';
import {
  type ApprovalDecision,
  type ApprovalDecisionInput,
  type ApprovalKind,
  type ApprovalOptions,
  type ApprovalOutcome,
  type ApprovalRequest,
  resolveApprovalOptions,
} from '../../agent/approval';
import type { StagedSummary } from '../../agent/commit';
import type { InheritedApproval } from '../../timetravel/fork/lineage';
import type { ApprovalActivities } from '../activities/approvalActivities';
import {
  APPROVAL_LAST_MEMO,
  APPROVAL_MEMO,
  type ApprovalState,
  approvalQuery,
  DECIDER_REFUSED,
  DECISION_INVALID,
  type DecisionReceipt,
  decideUpdate,
  decisionSignal,
  defaultDecisionId,
  NOT_PENDING,
} from './approvalMessages';
import { checkedActivities } from './checkedActivities';
import { type AgentRunOptions, DEFAULT_RUN_OPTIONS } from './runOptions';

const MAX_NOTE = 4_000;
const MEMO_LIST = 20;
const MEMO_LINE = 300;

function refuse(type: string, message: string): never {
  throw ApplicationFailure.create({ type, message, nonRetryable: true });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The memo form of a request: bounded, because memos ride in every listing of the namespace. */
function memoOf(r: ApprovalRequest, taskQueue: string): Record<string, unknown> {
  const cap = (list: string[]) =>
    list.slice(0, MEMO_LIST).map((l) => (l.length > MEMO_LINE ? `${l.slice(0, MEMO_LINE)}…` : l));
  const staged = r.staged && {
    files: cap(r.staged.files),
    sql: cap(r.staged.sql),
    mcp: cap(r.staged.mcp),
    more: Math.max(0, r.staged.files.length + r.staged.sql.length + r.staged.mcp.length - 3 * MEMO_LIST),
  };
  return { ...r, taskQueue, ...(staged ? { staged } : {}) };
}

export class ApprovalDesk {
  private pending: ApprovalRequest | null = null;
  private decision: ApprovalDecision | null = null;
  private readonly taken = new Map<string, DecisionReceipt>();
  private readonly outcomes: ApprovalOutcome[] = [];
  private readonly refused: ApprovalState['refused'] = [];
  private readonly asked = new Map<number, number>();
  private readonly activities: ApprovalActivities;

  /** A fork's parent decisions before the fork step (forkedRun.approval), and the parent tape's id. */
  private inherited: { lookup: (id: string) => InheritedApproval | undefined; from: string } | null = null;

  /**
   * `runKey`: a later segment's run key (src/temporal/workflow/continuation.ts), for its activity inputs.
   * `timing`: the run's step timeout and heartbeat timeout. Recording a request lists the run's staged change set
   * with its diffs, which can take as long as a step on a large one: the activities heartbeat like steps (a dead
   * worker is noticed within the heartbeat timeout) and may run as long as one.
   */
  constructor(
    private readonly taskQueue: string,
    runKey?: string,
    timing: Pick<AgentRunOptions, 'stepTimeoutMs' | 'heartbeatTimeoutMs'> = DEFAULT_RUN_OPTIONS,
  ) {
    const { stepTimeoutMs, heartbeatTimeoutMs } = { ...DEFAULT_RUN_OPTIONS, ...timing };
    this.activities = checkedActivities(
      proxyActivities<ApprovalActivities>({
        startToCloseTimeout: Math.max(60_000, stepTimeoutMs),
        heartbeatTimeout: heartbeatTimeoutMs,
        retry: { initialInterval: 1_000, backoffCoefficient: 2 },
      }),
      runKey,
    );
    setHandler(decideUpdate, (d) => this.take(d, 'update'), { validator: (d) => void this.check(d) });
    setHandler(decisionSignal, (d) => {
      try {
        this.take(d, 'signal');
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        // The id the run would have taken it under, so a sender can find its own refusal.
        const decisionId =
          typeof d?.decisionId === 'string' && d.decisionId
            ? d.decisionId
            : isPlainObject(d)
              ? defaultDecisionId(d)
              : '';
        this.refused.push({ decisionId, by: String(d?.by ?? ''), reason });
        log.warn('a decision sent as a signal was refused', { reason });
      }
    });
    setHandler(approvalQuery, () => ({
      pending: this.pending,
      outcomes: this.outcomes,
      refused: this.refused,
    }));
  }

  /** What a run that continues as new carries into its next segment: the outcomes so far and refused decisions. */
  saveState(): Omit<ApprovalState, 'pending'> {
    return { outcomes: [...this.outcomes], refused: [...this.refused] };
  }

  /** Takes up the previous segment's outcomes: a late decision on one of them is refused as it was there. */
  restoreState(state: Omit<ApprovalState, 'pending'>): void {
    this.outcomes.push(...state.outcomes);
    this.refused.push(...state.refused);
  }

  /** Validates a decision; a duplicate of one already taken is valid (and changes nothing). */
  private check(d: ApprovalDecisionInput): DecisionReceipt | null {
    if (!isPlainObject(d)) refuse(DECISION_INVALID, 'a decision is an object { approvalId, verdict, by }');
    if (d.verdict !== 'approve' && d.verdict !== 'reject')
      refuse(DECISION_INVALID, `verdict ${JSON.stringify(d.verdict)} is neither approve nor reject`);
    if (typeof d.by !== 'string' || d.by.trim() === '' || d.by.length > 200)
      refuse(DECISION_INVALID, 'a decision names who decides (by), at most 200 characters');
    if (typeof d.approvalId !== 'string' || d.approvalId === '')
      refuse(DECISION_INVALID, 'a decision names the approval it decides (approvalId)');
    if (d.note !== undefined && (typeof d.note !== 'string' || d.note.length > MAX_NOTE))
      refuse(DECISION_INVALID, `a note is text of at most ${MAX_NOTE} characters`);
    if (d.args !== undefined && !isPlainObject(d.args))
      refuse(DECISION_INVALID, 'edited arguments (args) must be an object');
    const id = typeof d.decisionId === 'string' && d.decisionId ? d.decisionId : defaultDecisionId(d);
    const earlier = this.taken.get(id);
    if (earlier) return { ...earlier, duplicate: true };
    const p = this.pending;
    if (p === null || p.id !== d.approvalId) {
      const ended = this.outcomes.find((o) => o.approvalId === d.approvalId);
      const waiting = p ? `; it waits for approval ${p.id} (${p.reason})` : '';
      if (ended)
        refuse(
          NOT_PENDING,
          ended.outcome === 'timedOut'
            ? `approval ${d.approvalId} timed out at ${new Date(ended.atMs).toISOString()} (onTimeout ${ended.onTimeout}); nobody can decide it any more${waiting}`
            : `approval ${d.approvalId} was already ${ended.outcome} by ${ended.by} at ${new Date(ended.atMs).toISOString()}${waiting}`,
        );
      refuse(
        NOT_PENDING,
        p
          ? `the run is not waiting for approval ${d.approvalId}${waiting}`
          : 'the run is not waiting for an approval',
      );
    }
    if (p.deciders && !p.deciders.includes(d.by))
      refuse(
        DECIDER_REFUSED,
        `${d.by} may not decide approval ${p.id}; its deciders are ${p.deciders.join(', ')}`,
      );
    if (d.verdict === 'reject' && !d.note?.trim())
      refuse(DECISION_INVALID, 'a rejection needs a reason (note)');
    if (d.args !== undefined && p.kind === 'commit')
      refuse(
        DECISION_INVALID,
        "a commit's approval has no arguments to edit; approve or reject it as staged",
      );
    return null;
  }

  private take(d: ApprovalDecisionInput, via: 'update' | 'signal'): DecisionReceipt {
    const duplicate = this.check(d);
    if (duplicate) return duplicate;
    const decisionId = d.decisionId || defaultDecisionId(d);
    const decision: ApprovalDecision = {
      approvalId: d.approvalId,
      decisionId,
      verdict: d.verdict,
      by: d.by,
      atMs: Date.now(),
      via,
      ...(d.note !== undefined ? { note: d.note } : {}),
      ...(d.args !== undefined ? { args: d.args } : {}),
    };
    // Not pending from here on: a second, different decision in the same workflow task is refused.
    this.pending = null;
    this.decision = decision;
    const receipt: DecisionReceipt = {
      approvalId: decision.approvalId,
      decisionId,
      verdict: decision.verdict,
      by: decision.by,
      atMs: decision.atMs,
      duplicate: false,
    };
    this.taken.set(decisionId, receipt);
    return receipt;
  }

  /** A fork takes over its parent's decisions on the approvals asked before its fork step. */
  inherit(lookup: (id: string) => InheritedApproval | undefined, from: string): void {
    this.inherited = { lookup, from };
  }

  /** The kind of the decision the next ask at `step` would take over from a fork's parent, if any. */
  inheritedKind(step: number): InheritedApproval['kind'] | undefined {
    return this.inherited?.lookup(`s${step}-${(this.asked.get(step) ?? 0) + 1}`)?.kind;
  }

  /**
   * Asks and waits. The request is on the tape and in the memo before any decision can be taken; the outcome
   * (a decision, or the deadline passing) is on the tape before this returns.
   */
  async ask(
    step: number,
    kind: ApprovalKind,
    reason: string,
    subject: ApprovalRequest['subject'],
    options: ApprovalOptions | true | undefined,
  ): Promise<ApprovalOutcome> {
    const o = resolveApprovalOptions(options);
    const n = (this.asked.get(step) ?? 0) + 1;
    this.asked.set(step, n);
    const id = `s${step}-${n}`;
    const taken = this.inherited?.lookup(id);
    if (taken && this.inherited) {
      // Decided in the parent run before the fork step: recorded on the fork's tape, not asked again.
      this.outcomes.push(taken.outcome);
      await this.activities.approvalDecided({
        step,
        kind,
        subject,
        outcome: taken.outcome,
        inheritedFrom: this.inherited.from,
      });
      return taken.outcome;
    }
    const requestedAtMs = Date.now();
    const request: ApprovalRequest = {
      id,
      step,
      kind,
      reason,
      subject,
      requestedAtMs,
      deadlineMs: requestedAtMs + o.timeoutMs,
      timeout: o.timeout,
      onTimeout: o.onTimeout,
      ...(o.deciders ? { deciders: o.deciders } : {}),
    };
    const { staged } = await this.activities.approvalRequested({ step, request });
    this.pending = staged ? { ...request, staged: staged as StagedSummary } : request;
    upsertMemo({ [APPROVAL_MEMO]: memoOf(this.pending, this.taskQueue) });
    const decidedHere = () => this.decision?.approvalId === request.id;
    await condition(decidedHere, o.timeoutMs);
    // A decision taken in the same workflow task as the timer fired was accepted: it counts.
    const d = decidedHere() ? this.decision : null;
    this.pending = null;
    const outcome: ApprovalOutcome = d
      ? { outcome: d.verdict === 'approve' ? 'approved' : 'rejected', ...d }
      : { outcome: 'timedOut', approvalId: request.id, atMs: Date.now(), onTimeout: o.onTimeout };
    this.outcomes.push(outcome);
    upsertMemo({
      [APPROVAL_MEMO]: null,
      [APPROVAL_LAST_MEMO]:
        outcome.outcome === 'timedOut'
          ? outcome
          : { outcome: outcome.outcome, approvalId: outcome.approvalId, by: outcome.by, atMs: outcome.atMs },
    });
    await this.activities.approvalDecided({ step, kind, subject, outcome });
    return outcome;
  }
}
