/**
 * A run's outcome, tokens and cost read from its timeline, in the terms an experiment compares. A what-if run's
 * commit whose gates passed reads as `committed` (its report says `stagedOnly`): it is what the run would do.
 */
import type { Timeline } from '../replay/timeline';
import type { ExperimentOutcome, RunSide } from './types';

function verdictLine(verdicts: { gate: string; ok: boolean; reason: string }[]): string {
  return verdicts.map((v) => `${v.gate}: ${v.reason}`).join('; ');
}

function outcomeOf(t: Timeline): { outcome: ExperimentOutcome; reason: string } {
  const trip = t.tape.frames.find((f) => f.kind === 'breaker.trip');
  if (trip) {
    const p = trip.payload as { reason?: unknown; detector?: unknown } | undefined;
    return { outcome: 'tripped', reason: String(p?.reason ?? p?.detector ?? 'the circuit breaker tripped') };
  }
  const last = t.booth.at(-1);
  if (last) {
    const a = last.answer;
    if (a.type === 'committed')
      return { outcome: 'committed', reason: verdictLine(a.report.verdicts) || 'no gates' };
    if (a.type === 'rolled-back')
      return {
        outcome: a.part === 'verify' || a.part === 'approval' ? 'refused' : 'rolled back',
        reason: a.verdicts.some((v) => !v.ok) ? verdictLine(a.verdicts.filter((v) => !v.ok)) : a.reason,
      };
    if (a.type === 'rollback') return { outcome: 'rolled back', reason: last.reason ?? a.report.reason };
    if (a.type === 'failed') return { outcome: 'failed', reason: a.error.message };
    return { outcome: 'unfinished', reason: `the tape ends inside step ${last.step}` };
  }
  if (!t.outcome) return { outcome: 'unfinished', reason: 'the tape ends before the run did' };
  if (t.outcome.status === 'completed') return { outcome: 'completed', reason: 'completed without a commit' };
  const e = t.outcome.error as { message?: unknown } | undefined;
  return { outcome: 'failed', reason: String(e?.message ?? t.outcome.status) };
}

export function runSideOf(t: Timeline): RunSide {
  let inputTokens = 0;
  let outputTokens = 0;
  let cost = 0;
  let priced = false;
  for (const s of t.steps) {
    inputTokens += s.usage?.inputTokens ?? 0;
    outputTokens += s.usage?.outputTokens ?? 0;
    if (s.cost !== null) {
      cost += s.cost;
      priced = true;
    }
  }
  const steps = new Set([...t.steps.map((s) => s.step), ...t.booth.map((b) => b.step)]).size;
  return {
    ...outcomeOf(t),
    steps,
    inputTokens,
    outputTokens,
    tokens: inputTokens + outputTokens,
    cost: priced ? cost : null,
  };
}
