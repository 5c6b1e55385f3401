/**
 * Whether a run's Shadow Booth staging ended rolled back, and why, read from its frames as they stream by: a
 * commit a gate refused, a commit whose part failed (compensated, then discarded), or the agent's own
 * `ctx.rollback`, with nothing committed after it. `jbx ls`, `jbx show` and the viewer say "rolled back" with
 * this reason instead of only the run's status: the accounting agent's refused refund *completes*.
 */

export interface RolledBack {
  /** The step of the commit (or rollback) that discarded the staging. */
  step: number;
  /**
   * `gate`: a gate refused the commit; `approval`: a gate asked a person, who rejected it or did not decide in
   * time; `failure`: a commit part failed; `agent`: the agent called ctx.rollback.
   */
  by: 'gate' | 'approval' | 'failure' | 'agent';
  /** The refusing gates' reasons (`gate: reason`), the person's rejection, the failure, or the agent's reason. */
  reason: string;
}

type P = Record<string, unknown>;

/** How the commit saga words a person's "no" (src/temporal/workflow/boothSaga.ts, NotApproved). */
const NOT_APPROVED = /^(rejected by |nobody approved it before its deadline)/;

interface Settled {
  step: number;
  rolledBack: RolledBack | null;
}

export class BoothOutcome {
  private readonly commitSteps = new Set<number>();
  private readonly askedSteps = new Set<number>();
  private readonly refusals = new Map<number, string>();
  private readonly settled: Settled[] = [];

  /** Feed every frame in tape order (blob frames may be skipped). */
  see(kind: string | undefined, step: number, payload: unknown): void {
    const p = payload as P;
    if (kind === 'activity.start') {
      if (p.activityType === 'boothVerify') this.commitSteps.add(step);
      else if (p.activityType === 'approvalDecided') this.askedSteps.add(step);
    } else if (kind === 'commit') {
      if (p.part === 'verify') {
        // A gate that asks a person (needsApproval) has not refused: the person decides.
        const refused = (
          (p.verdicts ?? []) as { gate?: string; ok?: boolean; reason?: string; needsApproval?: boolean }[]
        ).filter((v) => v.ok === false && v.needsApproval !== true);
        if (refused.length) this.refusals.set(step, refused.map((v) => `${v.gate}: ${v.reason}`).join('; '));
      } else if (p.part === 'all') this.settled.push({ step, rolledBack: null });
    } else if (kind === 'rollback' && p.part === 'all' && p.compensation !== true) {
      const reason = typeof p.reason === 'string' ? p.reason : '';
      const commit = this.commitSteps.has(step);
      const refused = this.refusals.get(step);
      this.settled.push({
        step,
        rolledBack: commit
          ? refused !== undefined || reason.startsWith('commit refused by ')
            ? { step, by: 'gate', reason: refused ?? reason }
            : {
                step,
                by: this.askedSteps.has(step) && NOT_APPROVED.test(reason) ? 'approval' : 'failure',
                reason,
              }
          : { step, by: 'agent', reason },
      });
    }
  }

  /**
   * How the staging ended. `runEnd`: the step the outcome was recorded at; a rollback there that no commit
   * asked for is the workflow discarding what a finished or failed run left, not a decision of the run.
   */
  result(runEnd: number | null): RolledBack | null {
    for (let i = this.settled.length - 1; i >= 0; i--) {
      const s = this.settled[i]!;
      if (s.rolledBack?.by === 'agent' && runEnd !== null && s.step >= runEnd) continue;
      return s.rolledBack;
    }
    return null;
  }
}

/** How a rolled-back run reads in a listing: `rolled back`, or `failed (rolled back)` when the run failed too. */
export function outcomeLabel(status: string, rolledBack: RolledBack | null, tripped = false): string {
  const notes = [...(rolledBack ? ['rolled back'] : []), ...(tripped ? ['tripped'] : [])];
  if (status === 'completed' && rolledBack) return tripped ? 'rolled back (tripped)' : 'rolled back';
  return notes.length ? `${status} (${notes.join(', ')})` : status;
}
