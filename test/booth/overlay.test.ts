import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitConflictError, StagedWorkspace, WorkspaceFsError } from '../../src/booth';
import {
  FIXTURE_TREE,
  type Fixture,
  makeFixture,
  OUTSIDE_TREE,
  STAGED_EVERYTHING_TREE,
  snapshot,
  stageEverything,
  viewSnapshot,
} from './helpers';

let fx: Fixture;
let ws: StagedWorkspace;
let realBefore: Record<string, string>;
beforeEach(async () => {
  fx = makeFixture();
  realBefore = snapshot(fx.base, ['staging']);
  ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
});
afterEach(() => fx.cleanup());

const fsCode = (code: string) => expect.objectContaining({ code: 'WORKSPACE_FS', fsCode: code });

describe('staged overlay: reads fall through, writes are held in escrow', () => {
  it('opening copies nothing and creates no staging area until the first write', async () => {
    expect(fs.existsSync(fx.staging)).toBe(false);
    expect(await ws.readFile('a.txt', 'utf8')).toBe('alpha\n');
    expect(await ws.readdir('.')).toEqual(['a.txt', 'dir', 'empty', 'exec.sh']);
    expect(fs.existsSync(fx.staging)).toBe(false);
  });

  it('write then read returns the staged bytes while the real file is untouched', async () => {
    await ws.writeFile('a.txt', 'changed\n');
    await ws.writeFile('new.txt', 'brand new');
    expect(await ws.readFile('a.txt', 'utf8')).toBe('changed\n');
    expect(await ws.readFile('new.txt', 'utf8')).toBe('brand new');
    expect(await ws.stat('a.txt')).toMatchObject({ type: 'file', size: 8, staged: true, mode: 0o644 });
    expect(fs.readFileSync(path.join(fx.root, 'a.txt'), 'utf8')).toBe('alpha\n');
    expect(snapshot(fx.base, ['staging'])).toEqual(realBefore);
  });

  it('appendFile copies the real content on first write and keeps its mode', async () => {
    await ws.appendFile('exec.sh', 'echo more\n');
    expect(await ws.readFile('exec.sh', 'utf8')).toBe('#!/bin/sh\necho hi\necho more\n');
    expect((await ws.stat('exec.sh')).mode).toBe(0o755);
  });

  it('delete then readdir hides the file; the real file stays', async () => {
    await ws.rm('dir/b.txt');
    expect(await ws.readdir('dir')).toEqual(['sub']);
    expect(await ws.exists('dir/b.txt')).toBe(false);
    await expect(ws.readFile('dir/b.txt')).rejects.toEqual(fsCode('ENOENT'));
    expect(fs.existsSync(path.join(fx.root, 'dir/b.txt'))).toBe(true);
  });

  it('recursive delete whites out a real tree, and a recreated dir is empty (opaque)', async () => {
    await expect(ws.rm('dir')).rejects.toEqual(fsCode('ENOTEMPTY'));
    await ws.rm('dir', { recursive: true });
    expect(await ws.readdir('.')).toEqual(['a.txt', 'empty', 'exec.sh']);
    await expect(ws.readFile('dir/sub/c.bin')).rejects.toEqual(fsCode('ENOENT'));
    await ws.mkdir('dir');
    expect(await ws.readdir('dir')).toEqual([]);
    await ws.writeFile('dir/b.txt', 'fresh');
    expect(await ws.readdir('dir')).toEqual(['b.txt']);
    expect(snapshot(fx.base, ['staging'])).toEqual(realBefore);
  });

  it('rename moves a file and a whole real tree', async () => {
    await ws.rename('a.txt', 'empty/a-moved.txt');
    expect(await ws.readdir('.')).toEqual(['dir', 'empty', 'exec.sh']);
    expect(await ws.readFile('empty/a-moved.txt', 'utf8')).toBe('alpha\n');
    await ws.rename('dir', 'moved');
    expect(await ws.readdir('moved')).toEqual(['b.txt', 'sub']);
    expect([...(await ws.readFile('moved/sub/c.bin'))]).toEqual([0, 1, 2, 255, 0, 7]);
    expect(await ws.exists('dir')).toBe(false);
    await expect(ws.rename('moved', 'moved/inner')).rejects.toEqual(fsCode('EINVAL'));
    expect((await ws.changes()).find((c) => c.path === 'moved/sub/c.bin')).toMatchObject({
      op: 'rename',
      from: 'dir/sub/c.bin',
    });
  });

  it('mkdir (plain and recursive) and chmod are staged', async () => {
    await expect(ws.mkdir('x/y/z')).rejects.toEqual(fsCode('ENOENT'));
    await ws.mkdir('x/y/z', { recursive: true });
    await expect(ws.mkdir('x')).rejects.toEqual(fsCode('EEXIST'));
    expect(await ws.readdir('x/y')).toEqual(['z']);
    await ws.chmod('a.txt', 0o600);
    await ws.chmod('dir', 0o700);
    expect(await ws.stat('a.txt')).toMatchObject({ mode: 0o600, staged: true });
    expect(await ws.stat('dir')).toMatchObject({ type: 'dir', mode: 0o700 });
    expect(await ws.readdir('dir')).toEqual(['b.txt', 'sub']);
    expect((fs.statSync(path.join(fx.root, 'a.txt')).mode & 0o777).toString(8)).toBe('644');
  });

  it('file-system rules of the merged view hold', async () => {
    await expect(ws.writeFile('nope/x.txt', 'x')).rejects.toEqual(fsCode('ENOENT'));
    await expect(ws.writeFile('dir', 'x')).rejects.toEqual(fsCode('EISDIR'));
    await expect(ws.readdir('a.txt')).rejects.toEqual(fsCode('ENOTDIR'));
    await expect(ws.writeFile('a.txt/x', 'x')).rejects.toEqual(fsCode('ENOTDIR'));
    await expect(ws.readFile('dir')).rejects.toBeInstanceOf(WorkspaceFsError);
    await ws.rm('missing', { force: true });
    expect(await ws.changes()).toEqual([]);
  });

  it('changes() lists the change set with sizes and a unified line diff', async () => {
    await ws.writeFile('dir/b.txt', 'bravo\nline two\nline 3\n');
    await ws.rm('a.txt');
    await ws.mkdir('newdir');
    const c = await ws.changes();
    expect(c.map((x) => [x.path, x.op])).toEqual([
      ['a.txt', 'delete'],
      ['dir/b.txt', 'write'],
      ['newdir', 'mkdir'],
    ]);
    const b = c[1]!;
    expect(b).toMatchObject({ bytesBefore: 20, bytesAfter: 22, after: { type: 'file', mode: 0o644 } });
    expect(b.diff).toContain('-line 2\n+line two\n');
    expect(b.diff).toContain('@@ -1,3 +1,3 @@');
    expect(b.summary).toBe('write dir/b.txt: 20 -> 22 bytes, mode 644, +1 -1 lines');
  });

  it('writing a new file then deleting it leaves nothing in the change set', async () => {
    await ws.writeFile('tmp.txt', 'x');
    await ws.rm('tmp.txt');
    expect(await ws.changes()).toEqual([]);
  });
});

describe('commit and discard', () => {
  it('nothing outside the staging area changes before commit; commit applies exactly the change set', async () => {
    await stageEverything(ws);
    expect(snapshot(fx.root)).toEqual(FIXTURE_TREE);
    expect(snapshot(fx.outside)).toEqual(OUTSIDE_TREE);
    expect(await viewSnapshot(ws)).toEqual(STAGED_EVERYTHING_TREE);
    const res = await ws.commit();
    expect(res.recovered).toBe(false);
    expect(snapshot(fx.root)).toEqual(STAGED_EVERYTHING_TREE);
    expect(snapshot(fx.outside)).toEqual(OUTSIDE_TREE);
    expect(fs.existsSync(fx.staging)).toBe(false);
    expect(await viewSnapshot(ws)).toEqual(STAGED_EVERYTHING_TREE);
    // After commit the workspace is a fresh, empty overlay over the new tree.
    expect(await ws.changes()).toEqual([]);
  });

  it('discard leaves the disk exactly as it was and removes the staging area', async () => {
    await stageEverything(ws);
    await ws.discard();
    expect(fs.existsSync(fx.staging)).toBe(false);
    expect(await viewSnapshot(ws)).toEqual(FIXTURE_TREE);
    expect(snapshot(fx.root)).toEqual(FIXTURE_TREE);
    await ws.reclaimed();
    expect(snapshot(fx.base)).toEqual(realBefore);
  });

  it('discard takes the staged changes away at once and deletes their folder in the background', async () => {
    await stageEverything(ws);
    await ws.discard();
    // The staged state is unreachable the moment discard returns: a new process opening the same stagingDir
    // sees nothing staged, whatever the deletion has got to.
    const reopened = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    expect(await reopened.changes()).toEqual([]);
    expect(await ws.changes()).toEqual([]);
    await ws.reclaimed();
    await reopened.reclaimed();
    expect(fs.readdirSync(fx.base).sort()).toEqual(['outside', 'root']);
    // The instance is a fresh overlay again: the next write stages into a new area.
    await ws.writeFile('a.txt', 'again');
    expect(await ws.readFile('a.txt', 'utf8')).toBe('again');
    expect(fs.readFileSync(path.join(fx.root, 'a.txt'), 'utf8')).toBe('alpha\n');
  });

  it('a discarded folder that a killed process never finished deleting is removed by the next open', async () => {
    await stageEverything(ws);
    // What a process killed right after discard()'s rename leaves behind.
    const leftover = `${fx.staging}.discarded-0123456789ab`;
    fs.renameSync(fx.staging, leftover);
    expect(fs.existsSync(path.join(leftover, 'manifest.json'))).toBe(true);
    const next = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    await next.reclaimed();
    expect(fs.existsSync(leftover)).toBe(false);
    expect(await next.changes()).toEqual([]);
    expect(snapshot(fx.base)).toEqual(realBefore);
  });

  it('a staging area inside the root is deleted before discard returns, never left visible in the tree', async () => {
    const inside = makeFixture({ stagingInside: true });
    try {
      const w = await StagedWorkspace.open({ root: inside.root, stagingDir: inside.staging });
      const before = snapshot(inside.root, [path.basename(inside.staging)]);
      await stageEverything(w);
      await w.discard();
      expect(fs.existsSync(inside.staging)).toBe(false);
      expect(snapshot(inside.root)).toEqual(before);
      expect(await w.readdir('.')).toEqual(fs.readdirSync(inside.root).sort());
    } finally {
      inside.cleanup();
    }
  });

  it('refuses to commit over a real file changed since it was staged, writing nothing', async () => {
    await ws.writeFile('a.txt', 'agent version');
    await ws.writeFile('new.txt', 'x');
    fs.writeFileSync(path.join(fx.root, 'a.txt'), 'human edit');
    const before = snapshot(fx.root);
    const err = await ws.commit().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitConflictError);
    expect((err as CommitConflictError).paths).toEqual(['a.txt']);
    expect(snapshot(fx.root)).toEqual(before);
    await ws.commit({ force: true });
    expect(fs.readFileSync(path.join(fx.root, 'a.txt'), 'utf8')).toBe('agent version');
  });

  it('a staged operation interrupted before its manifest is written is not seen after reopen', async () => {
    await ws.writeFile('kept.txt', 'kept');
    const crashing = await StagedWorkspace.open({
      root: fx.root,
      stagingDir: fx.staging,
      faultPoint: (n) => {
        if (n === 'stage:before-manifest') throw new Error('crash');
      },
    });
    await expect(crashing.writeFile('lost.txt', 'lost')).rejects.toThrow('crash');
    expect(await crashing.exists('lost.txt')).toBe(false);
    const again = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    expect(await again.readdir('.')).toContain('kept.txt');
    expect(await again.exists('lost.txt')).toBe(false);
  });
});
