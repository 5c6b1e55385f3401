import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitPendingError, StagedWorkspace } from '../../src/booth';
import {
  FIXTURE_TREE,
  type Fixture,
  makeFixture,
  STAGED_EVERYTHING_TREE,
  snapshot,
  stageEverything,
  viewSnapshot,
} from './helpers';

const REPO = path.resolve(__dirname, '../..');
const CHILD = path.join(__dirname, 'child.ts');

function child(fx: Fixture, action: string, arg?: string) {
  const args = ['--import', 'tsx', CHILD, fx.root, fx.staging, action, ...(arg === undefined ? [] : [arg])];
  return spawnSync(process.execPath, args, { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
}

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

describe('staged state lives on disk', () => {
  it('a new process opening the same stagingDir sees what another process staged, both ways', async () => {
    const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    await ws.writeFile('from-parent.txt', 'written by the parent');
    const read = child(fx, 'read');
    expect(read.status, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual({
      root: ['a.txt', 'dir', 'empty', 'exec.sh', 'from-parent.txt'],
      parent: 'written by the parent',
      changes: ['write from-parent.txt'],
    });
    const stage = child(fx, 'stage');
    expect(stage.status, stage.stderr).toBe(0);
    const reopened = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    expect(await reopened.readFile('from-child.txt', 'utf8')).toBe('written by the child');
    expect(await reopened.exists('a.txt')).toBe(false);
    expect(fs.existsSync(path.join(fx.root, 'a.txt'))).toBe(true);
    expect(fs.existsSync(path.join(fx.root, 'from-child.txt'))).toBe(false);
  });
});

/**
 * Every fault point a commit of the standard change set passes, in order: 11 journal steps. Spelled out (not
 * discovered) because it.each needs the list at collection time; the first test proves it is the real list.
 */
const points = [
  'commit:planned',
  'commit:journal-written',
  ...Array.from({ length: 11 }, (_, i) => `commit:file-applied:${i}`),
  'commit:applied',
  'commit:manifest-removed',
  'commit:done',
];

describe('commit interrupted at every fault point', () => {
  it('passes exactly the named points, in order', async () => {
    const names: string[] = [];
    const ws = await StagedWorkspace.open({
      root: fx.root,
      stagingDir: fx.staging,
      faultPoint: (n) => void names.push(n),
    });
    await stageEverything(ws);
    names.length = 0;
    await ws.commit();
    expect(names).toEqual(points);
  });

  it.each(points)('crash at %s, then recover() + commit() yields exactly the new state', async (point) => {
    expect(snapshot(fx.root)).toEqual(FIXTURE_TREE);
    const ws = await StagedWorkspace.open({
      root: fx.root,
      stagingDir: fx.staging,
      faultPoint: (n) => {
        if (n === point) throw new Error(`injected crash at ${n}`);
      },
    });
    await stageEverything(ws);
    expect(await viewSnapshot(ws)).toEqual(STAGED_EVERYTHING_TREE);
    await expect(ws.commit()).rejects.toThrow(`injected crash at ${point}`);
    if (point === 'commit:planned') expect(snapshot(fx.root)).toEqual(FIXTURE_TREE);

    // A new instance stands in for the restarted process.
    const after = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    if (fs.existsSync(path.join(fx.staging, 'commit.json')))
      await expect(after.writeFile('late.txt', 'x')).rejects.toBeInstanceOf(CommitPendingError);
    // The merged view is already the new state, even mid-commit.
    expect(await viewSnapshot(after)).toEqual(STAGED_EVERYTHING_TREE);
    await after.recover();
    await after.commit();
    expect(snapshot(fx.root)).toEqual(STAGED_EVERYTHING_TREE);
    expect(fs.existsSync(fx.staging)).toBe(false);
    // Idempotent: a second recover/commit changes nothing.
    await after.recover();
    await after.commit();
    expect(snapshot(fx.root)).toEqual(STAGED_EVERYTHING_TREE);
  });

  it.each(['commit:journal-written', 'commit:file-applied:3', 'commit:applied'])(
    'SIGKILL of a committing process at %s is finished by the next recover()',
    async (point) => {
      const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
      await stageEverything(ws);
      const run = child(fx, 'commit-kill', point);
      expect(run.signal, run.stderr).toBe('SIGKILL');
      expect(fs.existsSync(path.join(fx.staging, 'commit.json'))).toBe(true);
      const after = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
      await expect(after.discard()).rejects.toBeInstanceOf(CommitPendingError);
      expect(await after.recover()).toMatchObject({ recovered: true });
      expect(snapshot(fx.root)).toEqual(STAGED_EVERYTHING_TREE);
      expect(fs.existsSync(fx.staging)).toBe(false);
    },
  );
});
