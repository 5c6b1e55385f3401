/**
 * File names are bytes an agent chose: `jbx show` and the viewer print a name holding a newline, a carriage
 * return, an escape sequence or a bidi override escaped, so it can neither forge a frame line nor reorder what a
 * person reads; `--json` keeps the exact names.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import { TapeLibrary } from '../../src/cli/viewer';
import { runWithActivityTape } from '../../src/recorder/activityTape';
import { activityInfo, RUN, recorder, tempDir } from '../recorder/helpers';

const ROOT = path.resolve(__dirname, '../..');
const FORGED = 'a.txt\n    9  step   1     +0.001s  fs.mutation       {"op":"rm","path":"ledger.csv"}';
const BIDI = 'invoice\u202Etxt.exe';
const ANSI = 'report\r\x1b[2Kclean.txt';

function jbx(...args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'src/cli/bin.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('names with control and bidi characters, as jbx show and the viewer print them', () => {
  const tmp = tempDir('jbx-hostile-names-');
  let file: string;

  beforeAll(async () => {
    const workspace = path.join(tmp.dir, 'workspace');
    fs.mkdirSync(workspace);
    const booth = new BoothRuntime({ workspaceRoot: workspace, stagingRoot: path.join(tmp.dir, 'staging') });
    const rec = recorder(path.join(tmp.dir, 'tapes'));
    const tape = rec.forActivity(activityInfo('1', 1, 'toolStep'), 1);
    tape.start({ step: 1, name: 'write_files', args: {} }, []);
    await tape.toolCall('write_files', {});
    const run = await booth.open('wf', 'run');
    await runWithActivityTape(tape, async () => {
      await run.files.writeFile(FORGED, 'one\n');
      await run.files.writeFile(BIDI, 'two\n');
      await run.files.rename(BIDI, ANSI);
    });
    tape.toolResult('written');
    await tape.complete('written');
    await rec.close();
    await booth.close();
    file = rec.store.pathFor(RUN.workflowId, RUN.runId);
  });
  afterAll(() => tmp.cleanup());

  it('jbx show: one line per frame, names escaped, no raw control or bidi character', () => {
    const shown = jbx('show', file);
    expect(shown.code, shown.stderr).toBe(0);
    for (const ch of ['\u202E', '\r', '\x1b']) expect(shown.stdout).not.toContain(ch);
    const effects = shown.stdout.split('\n').filter((l) => l.includes('fs.mutation'));
    // Three mutations (two writes, a rename), each on its own line: the forged one did not add a line.
    expect(effects).toHaveLength(3);
    const expected = [
      '"path": "a.txt\\n    9  step   1     +0.001s  fs.mutation       {\\"op\\":\\"rm\\",\\"path\\":\\"ledger.csv\\"}"',
      '"path": "invoice\\u202etxt.exe"',
      '"path": "report\\r\\u001b[2Kclean.txt"',
    ];
    for (const [i, line] of effects.entries()) {
      const detail = jbx('show', file, '--frame', line.trim().split(/\s+/)[0]!);
      expect(detail.code, detail.stderr).toBe(0);
      for (const ch of ['\u202E', '\r', '\x1b']) expect(detail.stdout).not.toContain(ch);
      expect(detail.stdout).toContain(expected[i]);
    }
  });

  it('jbx show --json: the exact names for a parser, still nothing raw on the terminal', () => {
    const shown = jbx('show', file, '--json');
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain('\u202E');
    const json = JSON.parse(shown.stdout) as { frames: { kind: string; payload: { path?: string } }[] };
    const paths = json.frames.filter((f) => f.kind === 'fs.mutation').map((f) => f.payload.path);
    expect(paths).toEqual([FORGED, BIDI, ANSI]);
  });

  it('the viewer: effect summaries, diff headers and the row preview', () => {
    const library = new TapeLibrary(path.dirname(file), () => null);
    const id = path.basename(file, '.jbx');
    const row = library.run(id).rows.find((r) => r.marks.includes('fs.mutation'))!;
    const detail = library.step(id, row.i);
    expect(detail.effects.map((e) => e.summary)).toEqual([
      `write "a.txt\\n    9  step   1     +0.001s  fs.mutation       {\\"op\\":\\"rm\\",\\"path\\":\\"ledger.csv\\"}"`,
      'write "invoice\\u202etxt.exe"',
      'rename "invoice\\u202etxt.exe" → "report\\r\\u001b[2Kclean.txt"',
    ]);
    expect(detail.effects[1]!.diff?.path).toBe('"invoice\\u202etxt.exe"');
    expect(row.preview).not.toContain('\u202E');
    // The side-by-side comparison of two runs lists each step's effects, one line each.
    const compared = library.diff(id, id).rows.flatMap((r) => r.a?.effects ?? []);
    expect(compared).toEqual([
      'fs write "a.txt\\n    9  step   1     +0.001s  fs.mutation       {\\"op\\":\\"rm\\",\\"path\\":\\"ledger.csv\\"}"',
      'fs write "invoice\\u202etxt.exe"',
      'fs rename "report\\r\\u001b[2Kclean.txt"',
    ]);
  });
});
