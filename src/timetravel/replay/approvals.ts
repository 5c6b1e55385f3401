/**
 * The approvals on a tape (FORMAT.md, frame kind `approval`): what each asked and how it ended, by step. Offline
 * replay answers the agent's wait from them, a fork takes over the decisions before its fork step, the viewer
 * and `jbx show` show them.
 */
import type { ApprovalKind, ApprovalOutcome, ApprovalRequest } from '../../agent/approval';
import type { TapeFrame } from '../../recorder/tape';

type P = Record<string, unknown>;

export interface RecordedApproval {
  /** `s<step>-<n>`, unique within the run. */
  id: string;
  step: number;
  kind: ApprovalKind;
  /** What it asked about: the gates, or the call and its arguments as asked. */
  subject?: ApprovalRequest['subject'];
  /** The request frame's payload (absent when the decision was inherited by a fork without asking). */
  request?: P;
  requestFrame?: number;
  /** How it ended; absent while the run still waits (or the tape ends there). */
  outcome?: ApprovalOutcome;
  decisionFrame?: number;
  /** The parent tape whose decision a fork took over. */
  inheritedFrom?: string;
}

function outcomeOf(p: P): ApprovalOutcome | undefined {
  const approvalId = String(p.id);
  const atMs = Number(p.atMs);
  if (p.event === 'timeout')
    return {
      outcome: 'timedOut',
      approvalId,
      atMs,
      onTimeout: p.onTimeout === 'refuse' ? 'refuse' : 'rollback',
    };
  if (p.event !== 'decision' || (p.verdict !== 'approve' && p.verdict !== 'reject')) return undefined;
  return {
    outcome: p.verdict === 'approve' ? 'approved' : 'rejected',
    approvalId,
    decisionId: String(p.decisionId ?? ''),
    verdict: p.verdict,
    by: String(p.by ?? ''),
    atMs,
    via: p.via === 'signal' ? 'signal' : 'update',
    ...(typeof p.note === 'string' ? { note: p.note } : {}),
    ...(p.args && typeof p.args === 'object' ? { args: p.args as Record<string, unknown> } : {}),
  };
}

/** Collects the approval frames of a tape; a retried activity's repeat of a frame replaces the first. */
export class ApprovalReader {
  private readonly byId = new Map<string, RecordedApproval>();

  add(f: TapeFrame): void {
    const p = f.payload as P;
    if (typeof p?.id !== 'string') return;
    const a: RecordedApproval = this.byId.get(p.id) ?? {
      id: p.id,
      step: f.step,
      kind: (p.kind as ApprovalKind) ?? 'commit',
    };
    if (p.kind === 'commit' || p.kind === 'tool' || p.kind === 'mcp') a.kind = p.kind;
    if (p.subject && typeof p.subject === 'object') a.subject = p.subject as ApprovalRequest['subject'];
    if (p.event === 'request') {
      a.request = p;
      a.requestFrame = f.index;
    } else {
      const outcome = outcomeOf(p);
      if (outcome) {
        a.outcome = outcome;
        a.decisionFrame = f.index;
        if (typeof p.inheritedFrom === 'string') a.inheritedFrom = p.inheritedFrom;
      }
    }
    this.byId.set(p.id, a);
  }

  list(): RecordedApproval[] {
    return [...this.byId.values()].sort((x, y) => x.step - y.step || x.id.localeCompare(y.id));
  }
}

/** Steps where a tool or MCP call's rejection (or timeout) rolled the run's staging back: no agent rollback. */
export function approvalRollbackSteps(approvals: readonly RecordedApproval[]): Set<number> {
  return new Set(
    approvals
      .filter(
        (a) =>
          a.kind !== 'commit' &&
          (a.outcome?.outcome === 'rejected' ||
            (a.outcome?.outcome === 'timedOut' && a.outcome.onTimeout === 'rollback')),
      )
      .map((a) => a.step),
  );
}
