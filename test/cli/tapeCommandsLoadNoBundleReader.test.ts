/**
 * `jbx replay`, `jbx show` and `jbx verify` of a .jbx tape load what reading a tape needs and not the bundle
 * reader, which decodes Temporal histories with @temporalio/proto and protobufjs (~55 modules, 200-300 ms of a
 * loaded machine's start-up): each command's module requires it only for a .jbxb.
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

describe('jbx commands on a .jbx tape', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-tape-modules-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it.each([
    // --skip-code-check: the check bundles the project's code with Temporal's bundler (the whole Temporal room);
    // without it the command loads what the everyday replay of a run's stored code loads.
    { command: 'replay', args: ['--skip-code-check'], prints: '7/7 steps replayed offline' },
    { command: 'show', args: [], prints: 'researchAgent' },
    { command: 'verify', args: [], prints: 'sealed' },
  ])(
    'jbx $command loads no bundle reader, Temporal protobufs or protobufjs',
    async ({ command, args, prints }) => {
      const out = path.join(work, `${command}.txt`);
      const r = await jbx([command, TAPE, ...args], {
        env: {
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} -r ${path.join(__dirname, 'fixtures/recordModules.js')}`,
          JUKEBOX_TEST_MODULES_OUT: out,
        },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(prints);
      const modules = readFileSync(out, 'utf8').split('\n');
      // The recorder saw the command's own module (so an empty list cannot pass).
      expect(modules.some((m) => m.endsWith(path.join('src', 'cli', command, 'index.ts')))).toBe(true);
      expect(modules.filter((m) => /[/\\]timetravel[/\\]bundle[/\\]openBundle\.ts$/.test(m))).toEqual([]);
      expect(
        modules.filter((m) => /node_modules[/\\](protobufjs|@temporalio[/\\]proto)[/\\]/.test(m)),
      ).toEqual([]);
    },
  );
});
