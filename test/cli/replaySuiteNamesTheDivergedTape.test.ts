import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayTapes } from '../../src/timetravel/replay';
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
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    mkdirSync(folder);
    const accounting = await recordAccountingRuns();
    closers.push(() => accounting.close());
    for (const t of [accounting.tapes.committed, accounting.tapes.refused, accounting.tapes.partFailed])
      copyFileSync(t, path.join(folder, path.basename(t)));
    const setup = await recordingSetup();
    closers.push(() => setup.close());
    const recorded = await setup.record({ question: QUESTION });
    research = path.join(folder, path.basename(recorded.tapeFile));
    copyFileSync(recorded.tapeFile, research);
    // The recording workers' code stores come along, as a tape folder copied off a production host would.
    for (const dir of [accounting.tapeDir, setup.tapeDir])
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
    expect(lines.at(-1)).toMatch(
      /^4 tapes: 3 match, 1 diverged, 0 could not be replayed, 0 unsealed \(2 worker threads, [\d.]+ s\); JUnit report /,
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
