/**
 * An approval's Temporal messages and memo keys. Names and types only: both the workflow bundle and clients
 * import this (src/temporal/workflow/approvalDesk.ts handles them).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecisionInput, ApprovalOutcome, ApprovalRequest } from '../../agent/approval';

/** Memo keys: the approval a run waits for (removed once decided), and how its last approval ended. */
export const APPROVAL_MEMO = 'jukeboxApproval';
export const APPROVAL_LAST_MEMO = 'jukeboxApprovalLast';

/** What the update gives back: the decision as the run took it (`duplicate`: taken before, nothing new done). */
export interface DecisionReceipt {
  approvalId: string;
  decisionId: string;
  verdict: 'approve' | 'reject';
  by: string;
  atMs: number;
  duplicate: boolean;
}

export interface ApprovalState {
  pending: ApprovalRequest | null;
  outcomes: ApprovalOutcome[];
  /** Decisions that arrived as signals and were refused, with why. */
  refused: Array<{ decisionId: string; by: string; reason: string }>;
}

export const decideUpdate = defineUpdate<DecisionReceipt, [ApprovalDecisionInput]>('jukebox.approval.decide');
export const decisionSignal = defineSignal<[ApprovalDecisionInput]>('jukebox.approval.decision');
export const approvalQuery = defineQuery<ApprovalState>('jukebox.approval');

/** Failure types the validator refuses with; the client maps them back to typed errors. */
export const NOT_PENDING = 'ApprovalNotPendingError';
export const DECIDER_REFUSED = 'ApprovalDeciderRefusedError';
export const DECISION_INVALID = 'ApprovalDecisionInvalidError';

/** The decision id a client would derive; used for decisions sent without one (e.g. by the Temporal CLI). */
export function defaultDecisionId(d: Pick<ApprovalDecisionInput, 'approvalId' | 'verdict' | 'by'>): string {
  return `${d.approvalId}/${d.verdict}/${d.by}`;
}
