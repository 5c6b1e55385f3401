/**
 * Parallel tool steps of one run completing in two worker processes at once: every step's merge into the run's
 * staging keeps the others', so no step loses its staged files or its checkpoint; the second test makes one
 * step merge while another's merge waits for its SQL commit, after it read the step log at open.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { StagedWorkspace } from '../../src/booth';
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

it("a step merging while another step's merge waits for its SQL commit keeps both", async () => {
  const layers = path.join(path.dirname(fx.staging), 'layers');
  const open = (step: string) =>
    StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging, layerDir: path.join(layers, step) });
  const [a, b] = [await open('a'), await open('b')];
  await a.writeFile('a.txt', 'staged by a');
  await b.writeFile('b.txt', 'staged by b');
  // A's `before` (standing in for its SQL commit) runs while B merges whole: A then appends after B's record,
  // reading the log only from where it ended when A opened, and must neither drop B's step nor lose its own.
  let mergeOfB: boolean | null = null;
  const merged = await a.mergeOwnLayer(
    'a',
    { attempt: 1, result: 'a' },
    {
      before: async () => {
        mergeOfB = await b.mergeOwnLayer('b', { attempt: 1, result: 'b' });
      },
    },
  );
  expect(merged).toBe(true);
  expect(mergeOfB).toBe(true);

  const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
  expect([ws.stepRecord('a'), ws.stepRecord('b')]).toEqual([
    { attempt: 1, result: 'a' },
    { attempt: 1, result: 'b' },
  ]);
  expect([await ws.readFile('a.txt', 'utf8'), await ws.readFile('b.txt', 'utf8')]).toEqual([
    'staged by a',
    'staged by b',
  ]);
  // Merging a again (a retry that raced the first) appends nothing.
  expect(await (await open('a')).mergeOwnLayer('a', { attempt: 2, result: 'again' })).toBe(false);
  expect((await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging })).stepRecord('a')).toEqual({
    attempt: 1,
    result: 'a',
  });
});
