/**
 * Parallel tool steps of one run completing in two worker processes at once: every step's merge into the run's
 * manifest keeps the others', so no step loses its staged files or its checkpoint. A step merges outside the
 * manifest lock and renames under it only if nobody merged since; the second test forces that race.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { StagedWorkspace } from '../../sandbox';
import { type Fixture, makeFixture } from './helpers';

const REPO = path.resolve(__dirname, '../..');
const CHILD = path.join(__dirname, 'stepChild.ts');
const STEPS_PER_PROCESS = 40;

function worker(fx: Fixture, tag: string, startAt: number): Promise<void> {
  const layers = path.join(path.dirname(fx.staging), 'layers');
  const args = ['--import', 'tsx', CHILD, fx.root, fx.staging, layers, tag, String(STEPS_PER_PROCESS)];
  const p = spawn(process.execPath, [...args, String(startAt)], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr.on('data', (d) => {
    err += d;
  });
  return new Promise((resolve, reject) =>
    p.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`worker ${tag} exited ${code}: ${err}`)),
    ),
  );
}

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

it('steps completing concurrently in two processes all keep their files and checkpoints', async () => {
  // Far enough ahead for both processes to load and open their steps before merging.
  const startAt = Date.now() + 4_000;
  await Promise.all([worker(fx, 'a', startAt), worker(fx, 'b', startAt)]);

  const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
  const missing: string[] = [];
  for (const tag of ['a', 'b'])
    for (let i = 0; i < STEPS_PER_PROCESS; i++) {
      const step = `${tag}-${i}`;
      const record = ws.stepRecord(step);
      const text = await ws.readFile(`${step}.txt`, 'utf8').catch(() => null);
      if (record === null || text !== `staged by step ${step}`) missing.push(step);
      else expect(record).toEqual({ attempt: 1, result: { step } });
    }
  expect(missing).toEqual([]);
  expect((await ws.changes()).filter((c) => c.path.endsWith('.txt')).length).toBe(2 * STEPS_PER_PROCESS);
}, 60_000);

it('a step whose checkpoint another step merged past, between its read and its rename, merges again', async () => {
  const layers = path.join(path.dirname(fx.staging), 'layers');
  const open = (step: string) =>
    StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging, layerDir: path.join(layers, step) });
  const [a, b] = [await open('a'), await open('b')];
  await a.writeFile('a.txt', 'staged by a');
  await b.writeFile('b.txt', 'staged by b');
  // A's merged manifest is written to a temp file before its rename; B merges as soon as that temp exists, so
  // the manifest A merged from is stale when A takes the lock.
  const tempOfA = async () => {
    for (;;) {
      if (fs.readdirSync(fx.staging).some((n) => n.startsWith('.manifest.json.'))) return;
      await new Promise((r) => setTimeout(r, 1));
    }
  };
  const merged = await a.mergeOwnLayer(
    'a',
    { attempt: 1, result: 'a' },
    {
      syncBlobs: true,
      before: async () => {
        await tempOfA();
        expect(await b.mergeOwnLayer('b', { attempt: 1, result: 'b' }, { syncBlobs: true })).toBe(true);
      },
    },
  );
  expect(merged).toBe(true);

  const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
  expect([ws.stepRecord('a'), ws.stepRecord('b')]).toEqual([
    { attempt: 1, result: 'a' },
    { attempt: 1, result: 'b' },
  ]);
  expect([await ws.readFile('a.txt', 'utf8'), await ws.readFile('b.txt', 'utf8')]).toEqual([
    'staged by a',
    'staged by b',
  ]);
  // The temp A merged from the stale manifest is gone, not left beside the manifest.
  expect(fs.readdirSync(fx.staging).filter((n) => n.endsWith('.tmp'))).toEqual([]);
});
