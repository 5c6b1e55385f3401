import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayTapes } from '../../src/testing';
import { recordAccountingRuns } from '../timetravel/replay/accountingRuns';
import { runJbx } from '../timetravel/replay/jbx';
import { QUESTION, recordingSetup } from '../timetravel/replay/recordedRun';

const ROOT = path.resolve(__dirname, '../..');

/** A real XML parser (Python's expat) reads the report; it fails on anything not well-formed. */
function parseJUnit(file: string): {
  tag: string;
  attrs: Record<string, string>;
  suites: {
    attrs: Record<string, string>;
    cases: {
      attrs: Record<string, string>;
      children: { tag: string; attrs: Record<string, string>; text: string }[];
    }[];
  }[];
} {
  const script = `
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(json.dumps({"tag": root.tag, "attrs": root.attrib, "suites": [
  {"attrs": s.attrib, "cases": [
    {"attrs": c.attrib, "children": [{"tag": x.tag, "attrs": x.attrib, "text": x.text or ""} for x in c]}
    for c in s.findall("testcase")]}
  for s in root.findall("testsuite")]}))
`;
  return JSON.parse(execFileSync('python3', ['-c', script, file], { encoding: 'utf8' }));
}

describe('jbx replay DIR: a folder of tapes as a regression suite', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'jbx-suite-'));
  const folder = path.join(work, 'recorded');
  const project = path.join(work, 'ci-project');
  let research: string;
  /** The accounting tapes' names in the folder: committed, refused by the gate, failed at the MCP part. */
  let accounting: { committed: string; refused: string; partFailed: string };
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    mkdirSync(folder);
    const recordedAccounting = await recordAccountingRuns();
    closers.push(() => recordedAccounting.close());
    const { committed, refused, partFailed } = recordedAccounting.tapes;
    for (const t of [committed, refused, partFailed]) copyFileSync(t, path.join(folder, path.basename(t)));
    accounting = {
      committed: path.basename(committed),
      refused: path.basename(refused),
      partFailed: path.basename(partFailed),
    };
    const setup = await recordingSetup();
    closers.push(() => setup.close());
    const recorded = await setup.record({ question: QUESTION });
    research = path.join(folder, path.basename(recorded.tapeFile));
    copyFileSync(recorded.tapeFile, research);
    // The recording workers' code stores come along, as a tape folder copied off a production host would.
    for (const dir of [recordedAccounting.tapeDir, setup.tapeDir])
      cpSync(path.join(dir, 'code'), path.join(folder, 'code'), { recursive: true });
    // The project as CI checks it out: the research agent's prompt was edited, the accounting agent was not.
    mkdirSync(project);
    writeFileSync(
      path.join(project, 'jukebox.config.json'),
      JSON.stringify({
        agents: [
          path.join(ROOT, 'test/timetravel/replay/fixtures/changedAgent.ts'),
          path.join(ROOT, 'examples/accounting/agent.ts'),
        ],
        gates: [path.join(ROOT, 'examples/accounting/gates.ts')],
      }),
    );
  }, 300_000);
  afterAll(async () => {
    for (const close of closers) await close();
    rmSync(work, { recursive: true, force: true });
  });

  it("--against the edited project reports exactly the edited agent's tape, exit 1, and a JUnit file that parses", async () => {
    const junit = path.join(work, 'reports', 'replay.xml');
    const r = await runJbx(['replay', folder, '--against', project, '--junit', junit], {
      offline: true,
      cwd: work,
    });
    expect(r.code, r.stderr).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(5);
    const diverged = lines.filter((l) => l.startsWith('DIVERGED'));
    expect(diverged).toEqual([
      expect.stringMatching(
        new RegExp(
          `^DIVERGED +recorded/${path.basename(research)} +researchAgent: step 0 \\(frame \\d+, llm\\.request\\): system \\(project code\\)$`,
        ),
      ),
    ]);
    expect(
      lines
        .filter((l) => l.startsWith('match '))
        .every((l) =>
          /accountingAgent: 8\/8 steps, 1 commit\(s\) judged again by the project's gates/.test(l),
        ),
    ).toBe(true);
    expect(lines.filter((l) => l.startsWith('match '))).toHaveLength(3);
    // In parallel up to the cores: a worker thread per core, at most one per tape.
    const threads = Math.min(os.availableParallelism(), 4);
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^4 tapes: 3 match, 1 diverged, 0 could not be replayed, 0 unsealed \\(${threads} worker threads, [\\d.]+ s\\); JUnit report `,
      ),
    );
    expect(r.stderr).toContain('jbx: 1 of 4 tapes diverged');

    const report = parseJUnit(junit);
    expect(report.tag).toBe('testsuites');
    expect(report.attrs).toMatchObject({ tests: '4', failures: '1', errors: '0', skipped: '0' });
    expect(report.suites).toHaveLength(1);
    const cases = report.suites[0]!.cases;
    expect(cases.map((c) => [c.attrs.classname, c.attrs.name, c.children.map((x) => x.tag)])).toEqual(
      [...readdirSorted(folder)].map((f) => [
        f.startsWith('researchAgent') ? 'jbx.replay.researchAgent' : 'jbx.replay.accountingAgent',
        `recorded/${f}`,
        f.startsWith('researchAgent') ? ['failure'] : [],
      ]),
    );
    const failure = cases.find((c) => c.children.length)!.children[0]!;
    expect(failure.attrs).toEqual({
      type: 'llm.request',
      message: 'diverged at step 0 (llm.request): system',
    });
    expect(failure.text).toContain('actual (code now): {"system":"You are a research assistant. Be brief."}');
  });

  it('a GLOB --against a project whose gate threshold or staging tool changed: each tape diverges at its commit step', {
    timeout: 300_000,
  }, async () => {
    const project = (name: string, config: Record<string, unknown>) => {
      const dir = path.join(work, name);
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'jukebox.config.json'), JSON.stringify(config));
      return dir;
    };
    const agents = [path.join(ROOT, 'examples/accounting/agent.ts')];
    const raised = project('raised-threshold', {
      agents,
      gates: [path.join(ROOT, 'test/timetravel/replay/fixtures/raisedThresholdGates.ts')],
    });
    const dollars = project('refund-in-dollars', {
      agents,
      gates: [path.join(ROOT, 'examples/accounting/gates.ts')],
      tools: [path.join(ROOT, 'test/timetravel/replay/fixtures/refundInDollarsTools.ts')],
      booth: path.join(ROOT, 'examples/accounting/replayWorld.ts'),
    });
    const glob = 'recorded/accountingAgent-*.jbx';
    const diverged = (stdout: string) =>
      new Map(
        stdout
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('DIVERGED'))
          .map((l) => [l.split(/\s+/)[1], l.replace(/^DIVERGED +\S+ +/, '').replace(/frame \d+/, 'frame N')]),
      );

    // $500 -> $1,000: the $750 refund now passes; the $120 ones pass with another reason.
    const r = await runJbx(['replay', glob, '--against', raised], { offline: true, cwd: work });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout.trim().split('\n').at(-1)).toMatch(
      /^3 tapes: 0 match, 3 diverged, 0 could not be replayed/,
    );
    expect(diverged(r.stdout)).toEqual(
      new Map([
        [
          `recorded/${accounting.committed}`,
          'accountingAgent: step 7 (frame N, commit.verdicts): verdicts[0].reason (project code)',
        ],
        [
          `recorded/${accounting.refused}`,
          'accountingAgent: step 7 (frame N, commit.verdicts): verdicts[0].ok, verdicts[0].reason (project code)',
        ],
        [
          `recorded/${accounting.partFailed}`,
          'accountingAgent: step 7 (frame N, commit.verdicts): verdicts[0].reason (project code)',
        ],
      ]),
    );

    // The tools staged again in a fixture world: every refund now stages a hundred times its amount.
    const staged = await runJbx(['replay', glob, '--against', dollars, '--json'], {
      offline: true,
      cwd: work,
    });
    expect(staged.code, staged.stderr).toBe(1);
    const report = JSON.parse(staged.stdout) as {
      results: {
        file: string;
        status: string;
        divergence?: { step: number; kind: string; fields: string[] };
      }[];
    };
    const sql = 'sql[0] UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?';
    expect(report.results.map((x) => [path.basename(x.file), x.status, x.divergence])).toEqual(
      [accounting.committed, accounting.refused, accounting.partFailed].sort().map((f) => [
        f,
        'diverged',
        expect.objectContaining({
          step: 7,
          kind: 'commit.staged',
          fields: ['file ledger.csv', sql, 'mcp[0] notify/notify_customer'],
        }),
      ]),
    );
  });

  it('replayTapes (the testing entry) gives the same verdicts in process', async () => {
    const report = await replayTapes(folder, { against: project, jobs: 1 });
    expect(report.ok).toBe(false);
    expect(report.summary).toMatchObject({ tapes: 4, match: 3, diverged: 1, errors: 0, workers: 0 });
    expect(
      report.results.filter((x) => x.status === 'diverged').map((x) => [x.file, x.divergence?.fields]),
    ).toEqual([[research, ['system']]]);
    // Without --against each tape replays with the code that recorded it: nothing diverges.
    const own = await replayTapes(folder, { jobs: 1 });
    expect(own.summary).toMatchObject({ tapes: 4, match: 4, diverged: 0 });
    expect(own.results.map((x) => x.code?.source)).toEqual(['stored', 'stored', 'stored', 'stored']);
  });
});

function readdirSorted(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jbx'))
    .sort();
}
