import type { ExperimentRunResult, ExperimentTotals } from './types';

const bump = (m: Record<string, number>, k: string) => {
  m[k] = (m[k] ?? 0) + 1;
};

export function experimentTotals(runs: readonly ExperimentRunResult[]): ExperimentTotals {
  const t: ExperimentTotals = {
    runs: runs.length,
    done: 0,
    failed: 0,
    diverged: 0,
    outcomeChanged: 0,
    outcomesBefore: {},
    outcomesAfter: {},
    transitions: {},
    tokensBefore: 0,
    tokensAfter: 0,
    costBefore: 0,
    costAfter: 0,
  };
  for (const r of runs) {
    bump(t.outcomesBefore, r.before.outcome);
    t.tokensBefore += r.before.tokens;
    t.costBefore += r.before.cost ?? 0;
    if (r.status !== 'done' || !r.after) {
      t.failed++;
      continue;
    }
    t.done++;
    if (r.diverged) t.diverged++;
    bump(t.outcomesAfter, r.after.outcome);
    t.tokensAfter += r.after.tokens;
    t.costAfter += r.after.cost ?? 0;
    if (r.after.outcome !== r.before.outcome) {
      t.outcomeChanged++;
      bump(t.transitions, `${r.before.outcome} → ${r.after.outcome}`);
    }
  }
  return t;
}
