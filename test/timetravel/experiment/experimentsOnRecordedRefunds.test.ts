import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoFingerprint, fingerprint } from '../../../examples/accounting/demo';
import { startViewer } from '../../../src/cli/viewer/server';
import { readTape } from '../../../src/recorder/tape';
import { runExperiment } from '../../../src/temporal';
import {
  type ExperimentReport,
  type ExperimentRunResult,
  renderExperimentHtml,
  renderExperimentJunit,
  renderExperimentTerminal,
} from '../../../src/timetravel/experiment';
import { runJbx } from '../replay/jbx';
import { dollars, type RecordedRefunds, RUNS, recordRefundRuns, refundScript } from './refundRuns';

const BIN = path.join(__dirname, '../../../src/cli/bin.js');
const ROOT = path.join(__dirname, '../../..');
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => from + k);

describe('jbx experiment over 50 recorded refund runs', () => {
  let rec: RecordedRefunds;
  let world: DemoFingerprint;
  const byIndex = (report: ExperimentReport) => rec.tapes.map((t) => report.runs.find((r) => r.tape === t)!);

  beforeAll(async () => {
    rec = await recordRefundRuns();
    world = await fingerprint(rec.demo);
  }, 240_000);

  afterAll(async () => {
    await rec?.close();
  });

  it('records the runs as the quickstart does: $50..$490 committed, $510..$1030 refused by the $500 gate', async () => {
    const ls = await runJbx(['ls', '--dir', rec.tapeDir, '--json']);
    expect(ls.code).toBe(0);
    const rows = JSON.parse(ls.stdout) as { file: string; outcome: string; rolledBack: unknown }[];
    expect(rows).toHaveLength(RUNS);
    for (const [i, t] of rec.tapes.entries()) {
      const row = rows.find((r) => path.resolve(r.file) === t)!;
      expect([i, row.outcome, row.rolledBack !== null]).toEqual([i, 'completed', dollars(i) > 500]);
    }
  });

  it('a changed gate threshold (--set): killed mid-way, resumed without redoing a run, reported as JSON, JUnit and HTML', async () => {
    const state = path.join(rec.base, 'threshold.jsonl');
    const junit = path.join(rec.base, 'threshold.xml');
    const html = path.join(rec.base, 'threshold.html');
    const args = [
      BIN,
      'experiment',
      rec.tapeDir,
      '--set',
      'gate.refund-threshold.limitCents=80000',
      '--concurrency',
      '4',
      '--state',
      state,
      '--junit',
      junit,
      '--html',
      html,
      '--json',
    ];
    const env = { ...process.env, JUKEBOX_TAPE_DIR: rec.tapeDir };
    rec.model.loadScript(refundScript()); // resets the request count
    // First invocation: SIGKILL once ten runs are recorded in the state file.
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) =>
      child.on('close', (_c, signal) => resolve(signal ? -1 : _c)),
    );
    const finishedLines = () =>
      fs.existsSync(state) ? fs.readFileSync(state, 'utf8').split('\n').filter(Boolean).length - 1 : 0;
    while (finishedLines() < 10) {
      if (child.exitCode !== null) throw new Error(`jbx experiment exited early with ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    child.kill('SIGKILL');
    expect(await exited).toBe(-1);
    const finishedBeforeKill = fs
      .readFileSync(state, 'utf8')
      .split('\n')
      .slice(1)
      .filter((l) => l.startsWith('{')).length;
    expect(finishedBeforeKill).toBeGreaterThanOrEqual(10);
    expect(finishedBeforeKill).toBeLessThan(RUNS);

    const resumed = await runJbx(args.slice(1), { env });
    expect(resumed.stderr).toContain(`${RUNS}/${RUNS} runs`);
    expect(resumed.code).toBe(0);
    const report = JSON.parse(resumed.stdout) as ExperimentReport;
    // Every fork ran exactly once: three model calls each, none again for a run finished or started before the kill.
    expect(rec.model.requestCount()).toBe(RUNS * 3);
    expect(report.resumed).toBeGreaterThanOrEqual(finishedBeforeKill);
    expect(report.runs).toHaveLength(RUNS);
    const lines = fs.readFileSync(state, 'utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(RUNS + 1);
    expect(new Set(lines.slice(1).map((l) => (JSON.parse(l) as ExperimentRunResult).id)).size).toBe(RUNS);

    const runs = byIndex(report);
    const summary = (r: ExperimentRunResult) => [
      r.status,
      r.diverged,
      r.firstDivergence && [r.firstDivergence.step, r.firstDivergence.kind, r.firstDivergence.fields],
      r.before.outcome,
      r.after?.outcome,
    ];
    for (const i of range(0, 22))
      expect([i, ...summary(runs[i]!)]).toEqual([i, 'done', false, null, 'committed', 'committed']);
    for (const i of range(23, 37))
      expect([i, ...summary(runs[i]!)]).toEqual([
        i,
        'done',
        true,
        [5, 'commit', ['answer', 'part', 'verdicts']],
        'refused',
        'committed',
      ]);
    // Still refused above $800: the gate decides as before (its reason quotes the new threshold: not a divergence).
    for (const i of range(38, 49))
      expect([i, ...summary(runs[i]!)]).toEqual([i, 'done', false, null, 'refused', 'refused']);
    // The frame is the fork tape's, where its commit step starts (four frames later than on the recording: the
    // fork's header frames come first).
    for (const r of runs.filter((x) => x.diverged)) {
      expect(r.firstDivergence!.frame).toBe(FRAME_OF_COMMIT);
      expect(r.firstDivergence!.parentFrame).toBe(PARENT_FRAME_OF_COMMIT);
      expect(readTape(r.forkTape!).frames[r.firstDivergence!.frame]!.step).toBe(5);
    }
    expect(runs[30]!.after!.reason).toBe(
      'refund-threshold: 1 refund(s) totalling $650.00, each within the $800.00 autonomous threshold',
    );
    expect(runs[45]!.after!.reason).toBe(
      'refund-threshold: refund of $950.00 to R-45 exceeds the $800.00 autonomous threshold; a person must approve it',
    );
    for (const r of runs) {
      expect(r.after!.tokens).toBe(r.before.tokens);
      expect(r.after!.cost).toBeCloseTo(r.before.cost!, 12);
    }
    expect(report.totals).toMatchObject({
      runs: 50,
      done: 50,
      failed: 0,
      diverged: 15,
      outcomeChanged: 15,
      outcomesBefore: { committed: 23, refused: 27 },
      outcomesAfter: { committed: 38, refused: 12 },
      transitions: { 'refused → committed': 15 },
    });
    expect(report.totals.tokensAfter).toBe(report.totals.tokensBefore);

    // JUnit: a testcase per run, the diverged ones failures naming step, frame and the outcomes.
    const xml = fs.readFileSync(junit, 'utf8');
    expect(xml).toContain('<testsuites name="jbx experiment" tests="50" failures="15" errors="0">');
    expect(xml.match(/<testcase /g)).toHaveLength(50);
    expect(xml.match(/<failure /g)).toHaveLength(15);
    expect(xml).toContain(
      `message="diverged at step 5 (frame ${FRAME_OF_COMMIT}, commit: answer, part, verdicts); outcome refused → committed"`,
    );
    // HTML: the same page the viewer serves at /experiments/ID.
    const page = fs.readFileSync(html, 'utf8');
    expect(page).toBe(fs.readFileSync(path.join(rec.tapeDir, '.experiments', `${report.id}.html`), 'utf8'));
    expect(page).toContain('<b id="diverged">15</b>');
    expect(page.match(/<tr class="diverged changed">/g)).toHaveLength(15);
    expect(page).not.toMatch(/<script|src=|https?:/);
    expect(page).toContain(`<a href="/#/run/${path.basename(rec.tapes[30]!, '.jbx')}">`);
    const viewer = await startViewer({ dir: rec.tapeDir });
    try {
      const served = await fetch(`${viewer.url}experiments/${report.id}`);
      expect([served.status, served.headers.get('content-type'), await served.text()]).toEqual([
        200,
        'text/html; charset=utf-8',
        page,
      ]);
      expect(served.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect((await fetch(`${viewer.url}experiments/000000000000`)).status).toBe(404);
    } finally {
      await viewer.close();
    }

    // Nothing was committed: the ledger, the accounts database and the outbox hash as before; no staging is left.
    expect(await fingerprint(rec.demo)).toEqual(world);
    expect(fs.readdirSync(rec.demo.staging)).toEqual([]);

    // Running it again does nothing but report.
    const again = await runJbx(args.slice(1), { env });
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as ExperimentReport).resumed).toBe(RUNS);
    expect(rec.model.requestCount()).toBe(RUNS * 3);
  }, 300_000);

  it("takes the runs a jbx ls filter keeps (--outcome rolled-back --sort started --limit 3), an earlier experiment's forks left out", async () => {
    const ls = await runJbx([
      'ls',
      '--dir',
      rec.tapeDir,
      '--outcome',
      'rolled-back',
      '--sort',
      'started',
      '--json',
    ]);
    expect(ls.code).toBe(0);
    const rows = JSON.parse(ls.stdout) as { file: string; workflowId: string }[];
    // The threshold experiment's forks rolled everything back and are the newest runs: the limit must not count them.
    expect(rows[0]!.workflowId).toContain('.experiment-');
    const recordings = rows
      .filter((r) => !r.workflowId.includes('.experiment-'))
      .map((r) => path.resolve(r.file));
    expect(recordings).toHaveLength(range(0, 49).filter((i) => dollars(i) > 500).length);
    rec.model.loadScript(refundScript()); // resets the request count
    const run = await runJbx(
      [
        'experiment',
        rec.tapeDir,
        '--outcome',
        'rolled-back',
        '--sort',
        'started',
        '--limit',
        '3',
        '--set',
        'gate.refund-threshold.limitCents=80000',
        '--state',
        path.join(rec.base, 'filtered.jsonl'),
        '--json',
      ],
      { env: { ...process.env, JUKEBOX_TAPE_DIR: rec.tapeDir } },
    );
    expect([run.code, run.stderr]).toEqual([0, expect.stringContaining('3/3 runs')]);
    const report = JSON.parse(run.stdout) as ExperimentReport;
    expect(report.runs.map((r) => path.resolve(r.tape))).toEqual(recordings.slice(0, 3));
    for (const r of report.runs) {
      const i = rec.tapes.indexOf(path.resolve(r.tape));
      expect([r.status, r.before.outcome, r.after?.outcome]).toEqual([
        'done',
        'refused',
        dollars(i) > 800 ? 'refused' : 'committed',
      ]);
    }
    expect(rec.model.requestCount()).toBe(3 * 3);
    const zero = await runJbx(['experiment', rec.tapeDir, '--limit', '0', '--model', 'gpt-4.1']);
    expect([zero.code, zero.stderr]).toEqual([
      2,
      expect.stringContaining('--limit needs a positive integer, got "0"'),
    ]);
  }, 300_000);

  it('a changed model script (runExperiment): the new model stages three times every fifth refund', async () => {
    // The script the new model follows: the same turns, but every fifth refund staged at three times the amount.
    rec.model.loadScript({
      name: 'experiment-refunds-gpt-4.1-mini',
      turns: refundScript({
        model: 'gpt-4.1-mini',
        stagedCents: (i) => (i % 5 === 0 ? 3 : 1) * dollars(i) * 100,
      }).turns,
    });
    const report = await runExperiment({
      dir: rec.tapeDir,
      change: { overrides: { model: 'gpt-4.1-mini' } },
      connection: rec.env.connection,
      namespace: rec.env.namespace,
      tapeDir: rec.tapeDir,
      stateFile: path.join(rec.base, 'model.jsonl'),
      concurrency: 4,
    });
    expect(rec.model.requestCount()).toBe(RUNS * 3);
    const runs = byIndex(report);
    const fifth = range(0, 49).filter((i) => i % 5 === 0);
    for (const [i, r] of runs.entries()) {
      const outcomeAfter = dollars(i) * (i % 5 === 0 ? 3 : 1) > 500 ? 'refused' : 'committed';
      expect([i, r.status, r.diverged, r.before.outcome, r.after?.outcome]).toEqual([
        i,
        'done',
        fifth.includes(i),
        dollars(i) > 500 ? 'refused' : 'committed',
        outcomeAfter,
      ]);
      if (fifth.includes(i))
        expect(r.firstDivergence).toEqual({
          step: 2,
          frame: FRAME_OF_STEP_2,
          parentFrame: PARENT_FRAME_OF_STEP_2,
          kind: 'llm',
          fields: ['toolCalls'],
        });
      // Same answers, so the same tokens; the new model's price: $0.40 in, $1.60 out per million tokens.
      expect(r.after!.tokens).toBe(r.before.tokens);
      expect(r.after!.cost).toBeCloseTo((r.after!.inputTokens * 0.4 + r.after!.outputTokens * 1.6) / 1e6, 12);
      expect(r.after!.cost!).toBeGreaterThan(r.before.cost!);
    }
    expect(report.totals).toMatchObject({
      runs: 50,
      done: 50,
      diverged: 10,
      outcomeChanged: 3,
      outcomesAfter: { committed: 20, refused: 30 },
      transitions: { 'committed → refused': 3 },
    });
    const table = renderExperimentTerminal(report).split('\n');
    expect(table[0]).toBe(`experiment ${report.id}: model gpt-4.1-mini`);
    expect(table).toContain('outcomes after:  20 committed, 30 refused');
    expect(table).toContain('changed: 3 committed → refused');
    expect(table.find((l) => l.startsWith(path.basename(rec.tapes[10]!, '.jbx')))).toMatch(
      new RegExp(
        String.raw`^\S+\s+yes\s+step 2 frame ${FRAME_OF_STEP_2} \(llm: toolCalls\)\s+committed\s+refused\s+\d+\s+\d+\s+\$\d\.\d{4,}\s+\$\d\.\d{4,}$`,
      ),
    );
    const xml = renderExperimentJunit(report);
    expect(xml.match(/<failure /g)).toHaveLength(10);
    expect(xml).toContain('message="diverged at step 2');
    expect(renderExperimentHtml(report)).toContain('<b id="diverged">10</b>');
    expect(await fingerprint(rec.demo)).toEqual(world);
    expect(fs.readdirSync(rec.demo.staging)).toEqual([]);
  }, 300_000);

  it('refuses an experiment without a change, a bad gate parameter, a missing prompt file: exit 2, nothing started', async () => {
    const none = await runJbx(['experiment', rec.tapeDir]);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('an experiment needs a change')]);
    const bad = await runJbx(['experiment', rec.tapeDir, '--set', 'gate.refund-threshold=1']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('gate.NAME.KEY=VALUE')]);
    const prompt = await runJbx(['experiment', rec.tapeDir, '--system-prompt-file', '/nonexistent/p.txt']);
    expect([prompt.code, prompt.stderr]).toEqual([
      2,
      expect.stringContaining('/nonexistent/p.txt: no such file'),
    ]);
    const noDir = await runJbx(['experiment', path.join(rec.base, 'nowhere'), '--model', 'gpt-4.1']);
    expect(noDir.code).toBe(2);
  });
});

/**
 * Where step 2 and the commit (step 5) start on a fork's tape and on its recording's. Each streamed model step
 * before them stores its chunk text as one blob frame and, a batch of 8 or more chunks in a format-3 tape, its
 * chunk entries as another (FORMAT.md note 2): two frames before step 2, four before the commit.
 */
const FRAME_OF_STEP_2 = 25;
const PARENT_FRAME_OF_STEP_2 = 21;
const FRAME_OF_COMMIT = 61;
const PARENT_FRAME_OF_COMMIT = 57;
