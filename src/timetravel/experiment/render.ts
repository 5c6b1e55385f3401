/**
 * An experiment's report for people and machines: a terminal table, JUnit XML (one testcase per run; a run that
 * diverged is a failure, a run that could not run an error), and one self-contained HTML page.
 */
import { formatUsd } from '../../llm/pricing/formatUsd';
import { xmlText } from '../replay/junit';
import type { ExperimentReport, ExperimentRunResult, RunSide } from './types';

/** Left-aligned text columns; numbers right-aligned. */
function formatTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = head.map((_, i) => rows.length > 0 && rows.every((r) => /^[\d$.-]+$/.test(r[i] ?? '')));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

const usd = (n: number | null | undefined) => (n === null || n === undefined ? '-' : `$${formatUsd(n)}`);

function changeLine(r: ExperimentReport): string {
  const o = r.change.overrides;
  const parts = [
    ...(o.provider ? [`provider ${o.provider}`] : []),
    ...(o.model ? [`model ${o.model}`] : []),
    ...(o.system !== undefined ? [`system prompt (${o.system.length} chars)`] : []),
    ...Object.entries(o.set ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`),
    ...Object.entries(r.change.gateParams ?? {}).flatMap(([g, ps]) =>
      Object.entries(ps).map(([k, v]) => `gate.${g}.${k}=${JSON.stringify(v)}`),
    ),
  ];
  return parts.join(', ');
}

function divergenceCell(r: ExperimentRunResult): string {
  if (r.status !== 'done') return `error: ${r.error ?? 'not run'}`;
  const d = r.firstDivergence;
  return d ? `step ${d.step} frame ${d.frame} (${d.kind}: ${d.fields.join(', ')})` : '-';
}

function outcomes(r: ExperimentRunResult): [string, string] {
  return [r.before.outcome, r.after?.outcome ?? '-'];
}

export function renderExperimentTerminal(report: ExperimentReport): string {
  const rows = report.runs.map((r) => {
    const [before, after] = outcomes(r);
    return [
      r.id,
      r.status === 'done' ? (r.diverged ? 'yes' : 'no') : 'error',
      divergenceCell(r),
      before,
      after,
      String(r.before.tokens),
      r.after ? String(r.after.tokens) : '-',
      usd(r.before.cost),
      usd(r.after?.cost),
    ];
  });
  const t = report.totals;
  const counts = (m: Record<string, number>) =>
    Object.entries(m)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ') || 'none';
  return [
    `experiment ${report.id}: ${changeLine(report)}`,
    formatTable(
      [
        'run',
        'diverged',
        'first divergence',
        'before',
        'after',
        'tokens before',
        'tokens after',
        'cost before',
        'cost after',
      ],
      rows,
    ),
    '',
    `${t.runs} runs: ${t.done} compared, ${t.failed} failed; ${t.diverged} diverged, ${t.outcomeChanged} changed outcome` +
      (report.resumed ? ` (${report.resumed} finished earlier, taken from ${report.stateFile})` : ''),
    `outcomes before: ${counts(t.outcomesBefore)}`,
    `outcomes after:  ${counts(t.outcomesAfter)}`,
    ...(t.outcomeChanged ? [`changed: ${counts(t.transitions)}`] : []),
    `tokens ${t.tokensBefore} → ${t.tokensAfter}, cost ${usd(t.costBefore)} → ${usd(t.costAfter)}; nothing was committed`,
  ].join('\n');
}

export function renderExperimentJunit(report: ExperimentReport): string {
  const t = report.totals;
  const cases = report.runs.map((r) => {
    const attrs = `classname="${xmlText(`jbx.experiment.${report.id}`)}" name="${xmlText(r.id)}" file="${xmlText(r.tape)}"`;
    const [before, after] = outcomes(r);
    if (r.status !== 'done')
      return `    <testcase ${attrs}>\n      <error type="EXPERIMENT_RUN_FAILED" message="${xmlText(r.error ?? 'not run')}">${xmlText(`${r.tape}\n${r.error ?? ''}`)}</error>\n    </testcase>`;
    const out = `      <system-out>${xmlText(`outcome ${before} → ${after}; tokens ${r.before.tokens} → ${r.after?.tokens}; cost ${usd(r.before.cost)} → ${usd(r.after?.cost)}; fork ${r.forkWorkflowId}`)}</system-out>`;
    if (!r.diverged) return `    <testcase ${attrs}>\n${out}\n    </testcase>`;
    const d = r.firstDivergence!;
    const message = `diverged at step ${d.step} (frame ${d.frame}, ${d.kind}: ${d.fields.join(', ')}); outcome ${before} → ${after}`;
    return `    <testcase ${attrs}>\n      <failure type="${xmlText(d.kind)}" message="${xmlText(message)}">${xmlText(`${r.tape}\n${message}\nafter: ${r.after?.reason ?? ''}\nbefore: ${r.before.reason}`)}</failure>\n${out}\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="jbx experiment" tests="${t.runs}" failures="${t.diverged}" errors="${t.failed}">`,
    `  <testsuite name="${xmlText(`experiment ${report.id}: ${changeLine(report)}`)}" tests="${t.runs}" failures="${t.diverged}" errors="${t.failed}" skipped="0">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

function esc(v: unknown): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function side(s: RunSide | null): string {
  if (!s) return '<td>-</td><td>-</td><td>-</td>';
  return `<td class="outcome ${esc(s.outcome.replace(' ', '-'))}" title="${esc(s.reason)}">${esc(s.outcome)}</td><td class="num">${s.tokens}</td><td class="num">${esc(usd(s.cost))}</td>`;
}

/** One page, inline CSS, no scripts or external resources. `runLink(id)`: a run's page in the viewer. */
export function renderExperimentHtml(
  report: ExperimentReport,
  runLink: (tapeFile: string) => string | undefined = () => undefined,
): string {
  const t = report.totals;
  const link = (file: string | undefined, text: string) => {
    const href = file ? runLink(file) : undefined;
    return href ? `<a href="${esc(href)}">${esc(text)}</a>` : esc(text);
  };
  const rows = report.runs
    .map((r) => {
      const changed = r.after && r.after.outcome !== r.before.outcome;
      return `<tr class="${r.status !== 'done' ? 'error' : r.diverged ? 'diverged' : 'same'}${changed ? ' changed' : ''}"><td>${link(r.tape, r.id)}</td><td>${r.status === 'done' ? (r.diverged ? 'yes' : 'no') : 'error'}</td><td>${esc(divergenceCell(r))}</td>${side(r.before)}${side(r.after)}<td>${link(r.forkTape, r.forkWorkflowId)}</td></tr>`;
    })
    .join('\n');
  const counts = (m: Record<string, number>) =>
    Object.entries(m)
      .map(([k, n]) => `<li>${esc(k)}: <b>${n}</b></li>`)
      .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>jbx experiment ${esc(report.id)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.diverged td:nth-child(2){color:#b00;font-weight:bold}tr.changed{background:#fff6e0}tr.error{background:#fde8e8}
td.committed{color:#075}td.refused,td.rolled-back,td.tripped,td.failed{color:#b00}
.totals{display:flex;gap:3em}.totals ul{list-style:none;padding:0}
</style></head><body>
<h1>Experiment <code>${esc(report.id)}</code></h1>
<p id="change">Change: <b>${esc(changeLine(report))}</b> over ${t.runs} runs in <code>${esc(report.dir)}</code>, each forked at its first model step with everything staged and nothing committed.</p>
<div class="totals" id="totals">
<div><h3>Runs</h3><ul><li>compared: <b>${t.done}</b></li><li>failed: <b>${t.failed}</b></li><li>diverged: <b id="diverged">${t.diverged}</b></li><li>outcome changed: <b>${t.outcomeChanged}</b></li></ul></div>
<div><h3>Before</h3><ul>${counts(t.outcomesBefore)}<li>tokens: <b>${t.tokensBefore}</b></li><li>cost: <b>${esc(usd(t.costBefore))}</b></li></ul></div>
<div><h3>After</h3><ul>${counts(t.outcomesAfter)}<li>tokens: <b>${t.tokensAfter}</b></li><li>cost: <b>${esc(usd(t.costAfter))}</b></li></ul></div>
${t.outcomeChanged ? `<div><h3>Changed</h3><ul>${counts(t.transitions)}</ul></div>` : ''}
</div>
<table id="runs"><thead><tr><th>run</th><th>diverged</th><th>first divergence</th><th>before</th><th>tokens</th><th>cost</th><th>after</th><th>tokens</th><th>cost</th><th>fork</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
