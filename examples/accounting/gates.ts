/**
 * The accounting quickstart's policy gate: refunds above the autonomous threshold need a person. It reads the
 * refund from every part of the change set (the ledger lines, the balance updates, the notifications), so a
 * refund staged in any one of them alone cannot slip past.
 */
import { type Gate, needsApproval } from '../../src/booth/verifiers';
import { LEDGER_FILE, NOTIFY_SERVER } from './tools';

export const AUTONOMOUS_REFUND_LIMIT_CENTS = 50_000;

const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`;

/** Refund lines the ledger diff adds: `+date,customer,refund,amount_cents,memo`. */
function ledgerRefunds(diff: string | undefined): Array<{ customer: string; cents: number }> {
  return (diff ?? '')
    .split('\n')
    .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
    .map((l) => l.slice(1).split(','))
    .filter((f) => f[2] === 'refund')
    .map((f) => ({ customer: f[1] ?? '?', cents: Number(f[3]) }));
}

/**
 * `overLimit`: what a refund above the autonomous threshold gets. The threshold gate refuses it; the approval
 * gate (refundApprovalGate) asks a person instead, so the refund commits once someone approves it. A run may
 * pass `limitCents` as the gate's parameter (a what-if experiment: `--set gate.refund-threshold.limitCents=80000`).
 */
export function refundThresholdGate(
  defaultLimitCents = AUTONOMOUS_REFUND_LIMIT_CENTS,
  overLimit: 'refuse' | 'ask' = 'refuse',
): Gate {
  return ({ files, sql, mcp }, context) => {
    const param = context?.params.limitCents;
    const limitCents =
      typeof param === 'number' && Number.isInteger(param) && param >= 0 ? param : defaultLimitCents;
    const ledger = files.find((c) => c.path === LEDGER_FILE);
    if (ledger && ledger.diff === undefined)
      return {
        ok: false,
        reason: `${LEDGER_FILE} changed but has no readable diff; a person must review it`,
      };
    const refunds = ledgerRefunds(ledger?.diff);
    const statements =
      (sql as { statements?: { statement: string; params: unknown[] }[] } | null)?.statements ?? [];
    const balanceUpdates = statements.filter((s) => /update\s+accounts/i.test(s.statement));
    const notifications = mcp.filter((c) => c.server === NOTIFY_SERVER && c.tool === 'notify_customer');
    if (balanceUpdates.length !== refunds.length || notifications.length !== refunds.length)
      return {
        ok: false,
        reason: `the parts of the refund disagree: ${refunds.length} ledger refund lines, ${balanceUpdates.length} balance updates, ${notifications.length} notifications`,
      };
    for (const [i, r] of refunds.entries()) {
      const staged = Number(balanceUpdates[i]!.params[0]);
      if (!Number.isInteger(r.cents) || r.cents <= 0 || staged !== r.cents)
        return {
          ok: false,
          reason: `refund line ${i + 1} (${r.cents}) and its balance update (${staged}) differ`,
        };
      if (r.cents > limitCents && overLimit === 'refuse')
        return {
          ok: false,
          reason: `refund of ${dollars(r.cents)} to ${r.customer} exceeds the ${dollars(limitCents)} autonomous threshold; a person must approve it`,
        };
    }
    const asking = refunds.filter((r) => r.cents > limitCents);
    if (asking.length > 0)
      return needsApproval(
        `${asking.map((r) => `refund of ${dollars(r.cents)} to ${r.customer}`).join(', ')} exceeds the ${dollars(limitCents)} autonomous threshold; a person must approve it`,
      );
    const total = refunds.reduce((n, r) => n + r.cents, 0);
    return {
      ok: true,
      reason: refunds.length
        ? `${refunds.length} refund(s) totalling ${dollars(total)}, each within the ${dollars(limitCents)} autonomous threshold`
        : 'no refunds staged',
    };
  };
}

/** Refunds above the threshold wait for a person's approval instead of being refused. */
export function refundApprovalGate(limitCents = AUTONOMOUS_REFUND_LIMIT_CENTS): Gate {
  return refundThresholdGate(limitCents, 'ask');
}

/** The gates the accounting worker registers, by name (offline replay judges recorded commits with them again). */
export const gates: Record<string, Gate> = {
  'refund-threshold': refundThresholdGate(),
  'refund-approval': refundApprovalGate(),
};
