/** The two timelines side by side in a terminal, clipped to its width, the first divergence marked. */

import { formatUsd } from '../../llm/pricing/formatUsd';
import type { DiffRow, SideSummary, StepView, TimelineDiff } from './timelineDiff';

const MARK: Record<DiffRow['status'], string> = { same: ' ', changed: '~', removed: '-', inserted: '+' };

function clip(s: string, w: number): string {
  const flat = s.replace(/\s+/g, ' ');
  return flat.length <= w ? flat.padEnd(w) : `${flat.slice(0, Math.max(0, w - 1))}…`;
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
}

function stepLines(s: StepView | undefined, fields: string[]): string[] {
  if (!s) return [''];
  const tokens = s.kind === 'llm' ? `  ${s.tokens.input}→${s.tokens.output} tok` : '';
  const lines = [
    `#${s.step} ${s.kind} ${s.name}${tokens}${s.cost !== null ? `  $${s.cost.toFixed(4)}` : ''}`,
  ];
  if (s.kind === 'tool') lines.push(`  args ${show(s.args)}`);
  lines.push(`  ${s.error ? `ERROR ${s.error}` : `→ ${s.output}`}`);
  for (const f of fields) {
    if (['output', 'args', 'model', 'tool', 'kind', 'tokens', 'cost', 'error'].includes(f)) continue;
    const v = (s as unknown as Record<string, unknown>)[f];
    if (v !== undefined) lines.push(`  ${f}: ${show(v)}`);
  }
  for (const e of s.effects) lines.push(`  ${e}`);
  return lines;
}

function summaryLine(s: SideSummary): string {
  const cost = s.cost === null ? 'cost n/a' : `$${formatUsd(s.cost)}`;
  const fork = s.parent ? `  fork of ${s.parent.tapeId} at step ${s.parent.forkStep}` : '';
  return `${s.steps} steps  ${s.tokens.input}+${s.tokens.output} tok  ${cost}  ${s.outcome}${fork}`;
}

export function renderDiffTerminal(d: TimelineDiff, columns = 120): string {
  const width = Math.max(60, columns);
  const col = Math.floor((width - 5) / 2);
  const pair = (mark: string, l: string, r: string) => `${mark} ${clip(l, col)} │ ${clip(r, col)}`.trimEnd();
  const out = [
    pair(' ', `A ${d.a.file}`, `B ${d.b.file}`),
    pair(' ', summaryLine(d.a), summaryLine(d.b)),
    `${'─'.repeat(col + 2)}┼${'─'.repeat(col + 1)}`,
  ];
  d.rows.forEach((row, i) => {
    if (i === d.firstDivergence)
      out.push(`${'▼ first divergence '.padEnd(col + 2, '▼')}┼${'▼'.repeat(col + 1)}`);
    const fields = row.differences.map((x) => x.field);
    const left = stepLines(row.a, fields);
    const right = stepLines(row.b, fields);
    // Differences that are not a StepView field (an earlier message of the conversation) show side by side.
    for (const x of row.differences.filter((d) => d.field === 'messages')) {
      left.push(`  ${show(x.a)}`);
      right.push(`  ${show(x.b)}`);
    }
    for (let k = 0; k < Math.max(left.length, right.length); k++)
      out.push(pair(k === 0 ? MARK[row.status] : ' ', left[k] ?? '', right[k] ?? ''));
    if (row.differences.length) out.push(pair(' ', `  differs: ${fields.join(', ')}`, ''));
  });
  const c = d.counts;
  out.push(
    '',
    d.firstDivergence === null
      ? 'the timelines agree step for step'
      : `first divergence: row ${d.firstDivergence} (A step ${d.rows[d.firstDivergence]!.a?.step ?? '-'}, B step ${d.rows[d.firstDivergence]!.b?.step ?? '-'})`,
    `${c.same} same, ${c.changed} changed, ${c.removed} only in A, ${c.inserted} only in B; outcome A ${d.a.outcome}, B ${d.b.outcome}`,
  );
  return out.map((l) => (l.length > width ? l.slice(0, width) : l)).join('\n');
}
