/** The human view of a replay audit: one summary line, then expected vs actual side by side on divergence. */
import { oneLine, printableJson } from '../../errors';
import type { ReplayReport } from '../../timetravel/replay';

function cell(v: unknown): string {
  if (v === undefined) return '(absent)';
  return printableJson(v);
}

function clip(s: string, w: number): string {
  return s.length <= w ? s.padEnd(w) : `${s.slice(0, Math.max(0, w - 1))}…`;
}

/** How much a Temporal replay covered: its events, and its executions when the run continued as new. */
export function eventsOf(r: { eventCount: number; segments?: { runId: string }[] }): string {
  const n = r.segments?.length ?? 1;
  return n > 1 ? `${r.eventCount} events in ${n} executions, each replayed` : `${r.eventCount} events`;
}

export function renderReplayReport(r: ReplayReport, agentModule: string, columns: number): string {
  const head = `replay of ${r.file} (${r.workflowType} from ${agentModule})`;
  if (r.status !== 'diverged') {
    const what =
      r.status === 'match'
        ? 'every step and the outcome match the tape'
        : 'every recorded step matches (tape unsealed: the run did not finish)';
    const staged = r.stagingChecked
      ? `; ${r.stagingChecked} commit(s) staged again by the project's tools, as recorded`
      : '';
    const gates = r.gatesChecked
      ? `${staged}; ${r.gatesChecked} commit(s) judged again by the project's gates, with the recorded verdicts`
      : staged;
    return `${head}\n  ${r.replayed}/${r.steps} steps replayed offline in ${r.durationMs.toFixed(1)} ms: ${what}${gates}`;
  }
  const d = r.divergence!;
  const lines = [
    head,
    `  DIVERGED at step ${d.step}, frame ${d.frame} (${d.kind}) after ${r.replayed} matching steps`,
  ];
  const fieldW = Math.min(28, Math.max(5, ...d.fields.map((f) => f.length)));
  const valueW = Math.max(12, Math.floor((columns - fieldW - 8) / 2));
  lines.push(
    `  ${clip('field', fieldW)}  ${clip('expected (tape)', valueW)}  ${clip('actual (code now)', valueW)}`,
  );
  const exp = (d.expected ?? {}) as Record<string, unknown>;
  const act = (d.actual ?? {}) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(exp), ...Object.keys(act)])];
  for (const k of keys)
    lines.push(`  ${clip(oneLine(k), fieldW)}  ${clip(cell(exp[k]), valueW)}  ${clip(cell(act[k]), valueW)}`);
  if (!keys.length) lines.push(`  ${d.fields.map(oneLine).join('; ')}`);
  return lines.join('\n');
}
