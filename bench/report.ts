/**
 * The published results: bench/results.json keeps the latest run of every suite (a run of some suites replaces
 * only theirs), bench/RESULTS.md is rendered from it, and so are the tables the README and docs show between
 * `<!-- bench:SUITE -->` markers (optionally `<!-- bench:SUITE /REGEX/ -->` for the rows whose name matches),
 * so no figure they quote can drift from a run. test/bench/resultsMatchDocs.test.ts re-renders and compares.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { COMPARISON_CHANGES, type ComparisonChange } from './comparisons';
import { type BenchResult, fmt, type MachineInfo, type SuiteRun } from './harness';

export const ROOT = path.join(__dirname, '..');
export const RESULTS_JSON = path.join(__dirname, 'results.json');
export const RESULTS_MD = path.join(__dirname, 'RESULTS.md');
/** Files whose marked tables are rendered from the results. */
export const DOCS_WITH_TABLES = [
  'README.md',
  'docs/time-travel.md',
  'docs/performance.md',
  'docs/shadow-booth.md',
];

export interface ResultsFile {
  /** Every suite's latest run, in the order the runner lists suites. */
  suites: SuiteRun[];
}

export function readResults(file = RESULTS_JSON): ResultsFile {
  if (!existsSync(file)) return { suites: [] };
  return JSON.parse(readFileSync(file, 'utf8')) as ResultsFile;
}

/** The results with `runs` in place of earlier runs of the same suites, ordered as `order`. */
export function mergeRuns(results: ResultsFile, runs: SuiteRun[], order: string[]): ResultsFile {
  const bySuite = new Map(results.suites.map((s) => [s.suite, s]));
  for (const r of runs) bySuite.set(r.suite, r);
  const rank = (s: string) => (order.includes(s) ? order.indexOf(s) : order.length);
  return { suites: [...bySuite.values()].sort((a, b) => rank(a.suite) - rank(b.suite)) };
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A suite's rows as a Markdown table (only those whose name matches `filter`). */
export function rowsTable(rows: BenchResult[], filter?: RegExp): string {
  const lines = [
    '| benchmark | jukebox | peer | peer value | ratio | unit | note |',
    '| --- | ---: | --- | ---: | ---: | --- | --- |',
  ];
  for (const r of rows.filter((x) => !filter || filter.test(x.name)))
    lines.push(
      `| ${cell(r.name)} | ${fmt(r.jukebox)} | ${cell(r.peer)} | ${fmt(r.peer_value)} | ${fmt(r.ratio)} | ${cell(r.unit)} | ${cell(r.note ?? '')} |`,
    );
  return lines.join('\n');
}

function machineLine(m: MachineInfo): string {
  return `${m.host}: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}`;
}

const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');

/** The figure a change points at, as "jukebox (peer, ratio)" from the row of that name. */
function figureOf(results: ResultsFile, c: ComparisonChange): string {
  const row = results.suites.find((s) => s.suite === c.suite)?.rows.find((r) => r.name === c.row);
  if (!row) return `(no row "${c.row}" in the last ${c.suite} run)`;
  const peer =
    row.peer_value === null ? '' : ` against ${fmt(row.peer_value)} (${row.peer}), ratio ${fmt(row.ratio)}`;
  return `${fmt(row.jukebox)} ${row.unit}${peer}`;
}

export function renderResultsMd(results: ResultsFile, changes = COMPARISON_CHANGES): string {
  const out: string[] = [
    '# Benchmark results',
    '',
    'Rendered by `npm run bench` from `bench/results.json`; do not edit by hand. Each suite keeps its latest run:',
    '`npm run bench SUITE` replaces that suite only. Every Jukebox figure sits beside a peer measured in the same',
    'run doing the same work; a ratio below 1 means Jukebox took less. Load averages are the 1-, 5- and 15-minute',
    'figures of `/proc/loadavg` when the suite started and ended: on a shared 2-core machine they say how much of a',
    'figure is the machine.',
    '',
  ];
  const machines = [...new Set(results.suites.map((s) => machineLine(s.machine)))];
  out.push('## Machine', '');
  for (const m of machines) out.push(`- ${m}`);
  out.push(
    '',
    '| suite | date (UTC) | took | load before | load after | commit |',
    '| --- | --- | ---: | --- | --- | --- |',
  );
  for (const s of results.suites)
    out.push(
      `| ${s.suite} | ${s.startedAt.replace('T', ' ').slice(0, 16)} | ${Math.round(s.seconds)} s | ${loads(s.load.before)} | ${loads(s.load.after)} | ${s.commit} |`,
    );
  out.push('', '## What changed in each comparison', '');
  out.push(
    'The comparisons that did not do equal work on both sides, what each does now, and the figure before and after',
    '(before: the last published run of the old comparison; after: the current row of `bench/results.json`).',
    '',
    '| comparison | what changed | before | now |',
    '| --- | --- | --- | --- |',
  );
  for (const c of changes)
    out.push(
      `| ${cell(c.comparison)} | ${cell(c.change)} | ${cell(c.before)} | ${cell(figureOf(results, c))} |`,
    );
  for (const s of results.suites) {
    out.push(
      '',
      `## ${s.suite}`,
      '',
      `${s.startedAt.replace('T', ' ').slice(0, 19)} UTC, ${Math.round(s.seconds)} s, load ${loads(s.load.before)} → ${loads(s.load.after)}, commit ${s.commit}.`,
      `Breaker: ${s.breaker}`,
      '',
      rowsTable(s.rows),
    );
  }
  return `${out.join('\n')}\n`;
}

const MARKED = /<!-- bench:([\w-]+)(?: \/(.*?)\/)? -->\n(?:[\s\S]*?\n)?<!-- \/bench:\1 -->/g;

/** `text` with every marked table rendered from `results`; a suite the results lack leaves its table as it is. */
export function renderMarkedTables(text: string, results: ResultsFile): string {
  return text.replace(MARKED, (whole, suite: string, filter: string | undefined) => {
    const run = results.suites.find((s) => s.suite === suite);
    if (!run) return whole;
    const head = filter === undefined ? `<!-- bench:${suite} -->` : `<!-- bench:${suite} /${filter}/ -->`;
    const when = `Measured ${run.startedAt.slice(0, 10)}, load ${loads(run.load.before)} → ${loads(run.load.after)} (bench/RESULTS.md).`;
    return `${head}\n${rowsTable(run.rows, filter === undefined ? undefined : new RegExp(filter))}\n\n${when}\n<!-- /bench:${suite} -->`;
  });
}

/** Writes results.json, RESULTS.md and the docs' marked tables. */
export function publish(results: ResultsFile): void {
  writeFileSync(RESULTS_JSON, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(RESULTS_MD, renderResultsMd(results));
  for (const f of DOCS_WITH_TABLES) {
    const file = path.join(ROOT, f);
    const text = readFileSync(file, 'utf8');
    const next = renderMarkedTables(text, results);
    if (next !== text) writeFileSync(file, next);
  }
}
