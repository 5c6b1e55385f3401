/**
 * `jbx replay TAPE.jbx` loads what replaying a tape needs and not the bundle reader, which decodes Temporal
 * histories with @temporalio/proto and protobufjs (~55 modules, 200-300 ms of a loaded machine's start-up): the
 * command's module requires it only for a .jbxb.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runJbx as jbx } from '../timetravel/replay/jbx';

const TAPE = path.join(
  __dirname,
  '../timetravel/replay/fixtures/histories/outcome-recorded-once/research.jbx',
);

describe('jbx replay of a .jbx tape', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-replay-modules-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('replays it without loading the bundle reader, Temporal protobufs or protobufjs', async () => {
    const out = path.join(work, 'modules.txt');
    // --skip-code-check: the check bundles the project's code with Temporal's bundler (the whole Temporal room);
    // without it the command loads what the everyday replay of a run's stored code loads.
    const r = await jbx(['replay', TAPE, '--skip-code-check'], {
      env: {
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} -r ${path.join(__dirname, 'fixtures/recordModules.js')}`,
        JUKEBOX_TEST_MODULES_OUT: out,
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('7/7 steps replayed offline');
    const modules = readFileSync(out, 'utf8').split('\n');
    // The recorder saw the command's own modules (so an empty list cannot pass).
    expect(modules.some((m) => /src[/\\]cli[/\\]replay[/\\]index\.ts$/.test(m))).toBe(true);
    expect(modules.filter((m) => /[/\\]timetravel[/\\]bundle[/\\]openBundle\.ts$/.test(m))).toEqual([]);
    expect(modules.filter((m) => /node_modules[/\\](protobufjs|@temporalio[/\\]proto)[/\\]/.test(m))).toEqual(
      [],
    );
  });
});
