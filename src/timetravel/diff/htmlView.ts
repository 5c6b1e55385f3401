/**
 * One self-contained HTML page (inline CSS, no scripts, no external resources) with the two timelines side by
 * side: aligned rows, changed fields highlighted, the first divergence marked and scrolled to by its anchor.
 */

import { formatUsd } from '../../llm/pricing/formatUsd';
import type { DiffRow, FieldDifference, SideSummary, StepView, TimelineDiff } from './timelineDiff';

function esc(v: unknown): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const FIELDS: [keyof StepView, string][] = [
  ['provider', 'provider'],
  ['system', 'system'],
  ['prompt', 'prompt'],
  ['args', 'args'],
  ['output', 'output'],
  ['error', 'error'],
  ['tokens', 'tokens'],
  ['cost', 'cost'],
  ['effects', 'effects'],
];

function cell(
  s: StepView | undefined,
  changed: Set<string>,
  side: 'a' | 'b',
  status: DiffRow['status'],
  extra: FieldDifference[] = [],
): string {
  if (!s) return `<td class="step empty ${side}">${status === 'inserted' ? 'only in B' : 'only in A'}</td>`;
  const title = `<div class="title${changed.has('model') || changed.has('tool') || changed.has('kind') ? ' changed' : ''}"><span class="n">#${s.step}</span> ${esc(s.kind)} <b>${esc(s.name)}</b></div>`;
  // Tokens and cost belong to model calls; on a tool step they are always zero and n/a.
  const rows = FIELDS.filter(
    ([k]) => s[k] !== undefined && !(Array.isArray(s[k]) && (s[k] as unknown[]).length === 0),
  )
    .filter(([k]) => s.kind === 'llm' || (k !== 'tokens' && k !== 'cost'))
    .map(([k, label]) => {
      const v =
        k === 'tokens'
          ? `${s.tokens.input} in / ${s.tokens.output} out`
          : k === 'cost'
            ? s.cost === null
              ? 'n/a'
              : `$${formatUsd(s.cost)}`
            : s[k];
      return `<div class="f${changed.has(label) ? ' changed' : ''}"><span class="k">${label}</span> <span class="v">${esc(v)}</span></div>`;
    })
    .join('');
  const more = extra
    .map(
      (x) =>
        `<div class="f changed"><span class="k">${esc(x.field)}</span> <span class="v">${esc(side === 'a' ? x.a : x.b)}</span></div>`,
    )
    .join('');
  return `<td class="step ${side}">${title}${rows}${more}</td>`;
}

function summary(s: SideSummary, side: string): string {
  const cost = s.cost === null ? 'n/a' : `$${formatUsd(s.cost)}`;
  return `<th><div class="side">${side}</div><div class="file">${esc(s.file)}</div>
<div class="sum">${s.steps} steps · ${s.tokens.input} in / ${s.tokens.output} out tokens · cost ${cost} · <span class="outcome ${esc(s.outcome)}">${esc(s.outcome)}</span></div>
${s.parent ? `<div class="sum">fork of ${esc(s.parent.tapeId)} at step ${s.parent.forkStep}</div>` : ''}
${s.result !== undefined ? `<div class="sum result">result: ${esc(s.result)}</div>` : ''}</th>`;
}

export function renderDiffHtml(d: TimelineDiff): string {
  const body = d.rows
    .map((row, i) => {
      const changed = new Set(row.differences.map((x) => x.field));
      const extra = row.differences.filter((x) => x.field === 'messages');
      const first = i === d.firstDivergence;
      const marker = first ? '<tr class="divider"><td colspan="3">▼ first divergence</td></tr>' : '';
      return `${marker}<tr class="row ${row.status}${first ? ' first' : ''}"${first ? ' id="first-divergence"' : ''}>
${cell(row.a, changed, 'a', row.status, extra)}<td class="mark">${{ same: '=', changed: '≠', removed: '−', inserted: '+' }[row.status]}</td>${cell(row.b, changed, 'b', row.status, extra)}</tr>`;
    })
    .join('\n');
  const c = d.counts;
  const verdict =
    d.firstDivergence === null
      ? 'The timelines agree step for step.'
      : `First divergence at row ${d.firstDivergence}: A step ${d.rows[d.firstDivergence]!.a?.step ?? '–'} vs B step ${d.rows[d.firstDivergence]!.b?.step ?? '–'}.`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jbx diff</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:16px;color:#1b1f24;background:#fff}
h1{font-size:16px;margin:0 0 4px} .verdict{margin:0 0 12px;color:#444}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th{vertical-align:top;text-align:left;padding:8px;background:#f3f4f6;border:1px solid #d0d7de}
th .side{font-size:15px} .file{color:#555;word-break:break-all} .sum{margin-top:2px}
td{vertical-align:top;border:1px solid #d0d7de;padding:6px 8px;word-break:break-word}
th.mark,td.mark{width:28px;text-align:center;font-weight:bold;color:#777;padding:6px 0}
tr.same td.step{background:#fff}
tr.changed td.step{background:#fff8e1}
tr.removed td.a{background:#ffebe9} tr.inserted td.b{background:#e6ffec}
td.empty{color:#999;font-style:italic;background:#fafafa}
tr.first td{border-top:3px solid #cf222e}
tr.divider td{background:#cf222e;color:#fff;font-weight:bold;padding:2px 8px}
.f .k{color:#57606a;display:inline-block;min-width:64px}
.changed{background:#ffd33d66;outline:1px solid #d4a72c}
.title .n{color:#57606a}
.outcome.completed{color:#1a7f37}.outcome.failed{color:#cf222e}
footer{margin-top:12px;color:#555}
</style></head><body>
<h1>jbx diff</h1><p class="verdict">${esc(verdict)}</p>
<table><colgroup><col><col style="width:28px"><col></colgroup><thead><tr>${summary(d.a, 'A')}<th class="mark"></th>${summary(d.b, 'B')}</tr></thead>
<tbody>
${body}
</tbody></table>
<footer>${c.same} same · ${c.changed} changed · ${c.removed} only in A · ${c.inserted} only in B · outcome A ${esc(d.a.outcome)}, B ${esc(d.b.outcome)}</footer>
</body></html>
`;
}
