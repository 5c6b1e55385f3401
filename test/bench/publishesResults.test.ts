import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMPARISON_CHANGES } from '../../bench/comparisons';
import type { SuiteRun } from '../../bench/harness';
import {
  DOCS_WITH_TABLES,
  mergeRuns,
  RESULTS_MD,
  ROOT,
  readResults,
  renderMarkedTables,
  renderResultsMd,
} from '../../bench/report';

const run = (suite: string, jukebox: number): SuiteRun => ({
  suite,
  breaker: 'not involved: this suite runs no agent',
  startedAt: '2026-12-04T01:05:00.000Z',
  finishedAt: '2026-12-04T01:06:00.000Z',
  seconds: 60,
  load: { before: [3.5, 2, 1], after: [4, 2.25, 1.1] },
  machine: { host: 'h', cpu: 'Xeon', cores: 2, memoryGiB: 24, os: 'Linux 6', node: 'v20.20.2' },
  commit: 'abc',
  rows: [
    { name: 'a row', jukebox, peer: 'the peer', peer_value: 2, ratio: jukebox / 2, unit: 'ms' },
    { name: 'b|row', jukebox: 0.5, peer: 'none', peer_value: null, ratio: null, unit: 'µs', note: 'n' },
  ],
});

describe('published benchmark results', () => {
  it('renders a marked table from the results, rows filtered by the marker, a suite it lacks left alone', () => {
    const text =
      'x\n<!-- bench:tape /^a/ -->\nold\n<!-- /bench:tape -->\ny\n<!-- bench:other -->\n<!-- /bench:other -->\n';
    expect(renderMarkedTables(text, { suites: [run('tape', 1)] })).toBe(
      [
        'x',
        '<!-- bench:tape /^a/ -->',
        '| benchmark | jukebox | peer | peer value | ratio | unit | note |',
        '| --- | ---: | --- | ---: | ---: | --- | --- |',
        '| a row | 1.00 | the peer | 2.00 | 0.500 | ms |  |',
        '',
        'Measured 2026-12-04, load 3.50 / 2.00 / 1.00 → 4.00 / 2.25 / 1.10 (bench/RESULTS.md).',
        '<!-- /bench:tape -->',
        'y',
        '<!-- bench:other -->',
        '<!-- /bench:other -->',
        '',
      ].join('\n'),
    );
  });

  it('keeps the latest run of each suite, in the runner order', () => {
    const merged = mergeRuns(
      { suites: [run('replay', 1), run('tape', 1)] },
      [run('replay', 3)],
      ['tape', 'replay'],
    );
    expect(merged.suites.map((s) => [s.suite, s.rows[0]!.jukebox])).toEqual([
      ['tape', 1],
      ['replay', 3],
    ]);
  });

  it('RESULTS.md states machine, load before and after, breaker and every row, escaped', () => {
    const md = renderResultsMd({ suites: [run('tape', 1)] }, []);
    expect(md).toContain('- h: Xeon, 2 cores, 24 GiB, Linux 6, Node v20.20.2\n');
    expect(md).toContain(
      '| tape | 2026-12-04 01:05 | 60 s | 3.50 / 2.00 / 1.00 | 4.00 / 2.25 / 1.10 | abc |\n',
    );
    expect(md).toContain('Breaker: not involved: this suite runs no agent\n');
    expect(md).toContain('| b\\|row | 0.500 | none | - | - | µs | n |\n');
  });

  it('the committed RESULTS.md and the docs’ tables are exactly what bench/results.json renders', () => {
    const results = readResults();
    expect(results.suites.length).toBeGreaterThan(0);
    expect(readFileSync(RESULTS_MD, 'utf8')).toBe(renderResultsMd(results));
    for (const f of DOCS_WITH_TABLES) {
      const text = readFileSync(path.join(ROOT, f), 'utf8');
      expect(renderMarkedTables(text, results), f).toBe(text);
    }
  });

  it('every changed comparison of a published suite points at one of its rows', () => {
    const results = readResults();
    const published = COMPARISON_CHANGES.filter((c) => results.suites.some((s) => s.suite === c.suite));
    expect(published.length).toBeGreaterThan(0);
    for (const c of published) {
      const names = results.suites.find((s) => s.suite === c.suite)!.rows.map((r) => r.name);
      expect(names, `${c.suite}: ${c.row}`).toContain(c.row);
    }
  });
});
