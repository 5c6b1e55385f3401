import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PathEscapeError, PathRefusedError, StagedWorkspace } from '../../src/booth';
import { type Fixture, makeFixture, snapshot } from './helpers';

let fx: Fixture;
beforeAll(() => {
  fx = makeFixture({ hostile: true, stagingInside: true });
});
afterAll(() => fx.cleanup());

type Attempt = [
  name: string,
  run: (ws: StagedWorkspace, fx: Fixture) => Promise<unknown>,
  expected: 'escape' | string,
];

const escapes: Attempt[] = [
  ['readFile ../ out of the root', (ws) => ws.readFile('../outside/secret.txt'), 'escape'],
  ['writeFile ../ out of the root', (ws) => ws.writeFile('../outside/new.txt', 'x'), 'escape'],
  [
    'writeFile dir/../../ climbing back out',
    (ws) => ws.writeFile('dir/../../outside/secret.txt', 'x'),
    'escape',
  ],
  [
    'writeFile dir/./sub/../../../ mixed dots',
    (ws) => ws.writeFile('dir/./sub/../../../outside/x', 'x'),
    'escape',
  ],
  [
    'readFile through an inside symlink then ..',
    (ws) => ws.readFile('link-in/../../outside/secret.txt'),
    'escape',
  ],
  [
    'writeFile absolute path outside the root',
    (ws, f) => ws.writeFile(path.join(f.outside, 'secret.txt'), 'x'),
    'escape',
  ],
  ['writeFile /etc/passwd', (ws) => ws.writeFile('/etc/passwd', 'x'), 'escape'],
  ['readFile /etc/passwd', (ws) => ws.readFile('/etc/passwd'), 'escape'],
  ['writeFile //outside UNC-style absolute', (ws) => ws.writeFile('//outside/x', 'x'), 'escape'],
  ['rm / recursively', (ws) => ws.rm('/', { recursive: true }), 'escape'],
  [
    'writeFile through a dir symlink pointing outside',
    (ws) => ws.writeFile('link-out/secret.txt', 'x'),
    'escape',
  ],
  ['readFile through a dir symlink pointing outside', (ws) => ws.readFile('link-out/secret.txt'), 'escape'],
  ['writeFile onto a file symlink pointing outside', (ws) => ws.writeFile('dir/link-secret', 'x'), 'escape'],
  [
    'appendFile onto a file symlink pointing outside',
    (ws) => ws.appendFile('dir/link-secret', 'x'),
    'escape',
  ],
  ['readFile through an absolute symlink to /etc', (ws) => ws.readFile('abs-link/passwd'), 'escape'],
  [
    'writeFile through a dangling symlink pointing outside',
    (ws) => ws.writeFile('dangling-out', 'x'),
    'escape',
  ],
  ['rm a symlink pointing outside', (ws) => ws.rm('link-out', { recursive: true }), 'escape'],
  ['stat a symlink pointing outside', (ws) => ws.stat('link-out'), 'escape'],
  ['readdir through a symlink pointing outside', (ws) => ws.readdir('link-out/dir'), 'escape'],
  ['exists probes outside instead of answering false', (ws) => ws.exists('../outside/secret.txt'), 'escape'],
  ['readdir ..', (ws) => ws.readdir('..'), 'escape'],
  ['rename a root file to outside', (ws) => ws.rename('a.txt', '../outside/a.txt'), 'escape'],
  [
    'rename an outside file into the root',
    (ws) => ws.rename('../outside/secret.txt', 'stolen.txt'),
    'escape',
  ],
  ['rename into a symlinked dir pointing outside', (ws) => ws.rename('a.txt', 'link-out/a.txt'), 'escape'],
  ['mkdir outside', (ws) => ws.mkdir('../outside/newdir'), 'escape'],
  [
    'mkdir -p through a symlink pointing outside',
    (ws) => ws.mkdir('link-out/n/m', { recursive: true }),
    'escape',
  ],
  ['chmod an outside file', (ws) => ws.chmod('../outside/secret.txt', 0o777), 'escape'],
  ['chmod through a symlink pointing outside', (ws) => ws.chmod('link-out/secret.txt', 0o777), 'escape'],
  ['Windows ..\\ separators', (ws) => ws.writeFile('..\\outside\\secret.txt', 'x'), 'backslash'],
  ['Windows mixed dir\\..\\..\\', (ws) => ws.writeFile('dir\\..\\..\\outside\\x', 'x'), 'backslash'],
  ['Windows drive letter', (ws) => ws.writeFile('C:/Windows/x', 'x'), 'windows-drive'],
  ['NUL byte in a name', (ws) => ws.writeFile('a\0b', 'x'), 'nul-byte'],
  ['NUL byte truncation trick', (ws) => ws.readFile('../outside/secret.txt\0.txt'), 'nul-byte'],
  ['component over 255 bytes', (ws) => ws.writeFile('x'.repeat(256), 'x'), 'name-too-long'],
  ['multibyte component over 255 bytes', (ws) => ws.writeFile('é'.repeat(128), 'x'), 'name-too-long'],
  ['path over 4096 bytes', (ws) => ws.writeFile(`${'a/'.repeat(2100)}x`, 'x'), 'path-too-long'],
  ['empty path for writeFile', (ws) => ws.writeFile('', 'x'), 'empty'],
  ['empty path for readFile', (ws) => ws.readFile(''), 'empty'],
  ['write the root itself', (ws) => ws.writeFile('.', 'x'), 'root'],
  ['rm the root recursively', (ws) => ws.rm('dir/..', { recursive: true }), 'root'],
  ['rename the root', (ws, f) => ws.rename(f.root, 'elsewhere'), 'root'],
  [
    'writeFile into the staging area',
    (ws) => ws.writeFile('.jukebox-staging/manifest.json', '{}'),
    'staging-dir',
  ],
  ['readFile from the staging area', (ws) => ws.readFile('.jukebox-staging/manifest.json'), 'staging-dir'],
  ['rm the staging area', (ws) => ws.rm('.jukebox-staging', { recursive: true }), 'staging-dir'],
  [
    'rename into the staging area',
    (ws) => ws.rename('a.txt', 'dir/../.jukebox-staging/blobs/x'),
    'staging-dir',
  ],
  ['absolute path into the staging area', (ws, f) => ws.readFile(path.join(f.staging, 'x')), 'staging-dir'],
  ['writeFile over a hard link to an outside inode', (ws) => ws.writeFile('hard', 'pwned'), 'hard-link'],
  ['readFile of a hard link to an outside inode', (ws) => ws.readFile('hard'), 'hard-link'],
  ['appendFile to a hard link to an outside inode', (ws) => ws.appendFile('hard', 'x'), 'hard-link'],
  ['chmod a hard link to an outside inode', (ws) => ws.chmod('hard', 0o777), 'hard-link'],
  ['rename a hard link to an outside inode', (ws) => ws.rename('hard', 'moved'), 'hard-link'],
  ['readFile through an inside symlink (not followed)', (ws) => ws.readFile('link-in/b.txt'), 'symlink'],
  [
    'writeFile through an inside symlink (not followed)',
    (ws) => ws.writeFile('link-in/new.txt', 'x'),
    'symlink',
  ],
  ['readFile a FIFO (would block)', (ws) => ws.readFile('fifo'), 'special-file'],
  ['writeFile a FIFO', (ws) => ws.writeFile('fifo', 'x'), 'special-file'],
  ['readFile a unix socket', (ws) => ws.readFile('sock'), 'special-file'],
  ['readFile a device node', (ws) => ws.readFile('null'), 'special-file'],
  ['writeFile a device node', (ws) => ws.writeFile('null', 'x'), 'special-file'],
];

describe('confinement: escape attempts are refused and leave the disk byte-for-byte unchanged', () => {
  it('has at least 30 distinct attempts', () => {
    expect(new Set(escapes.map((e) => e[0])).size).toBe(escapes.length);
    expect(escapes.length).toBeGreaterThanOrEqual(30);
  });

  it.each(escapes)('%s', async (name, run, expected) => {
    const needs = /FIFO/.test(name)
      ? 'fifo'
      : /socket/.test(name)
        ? 'socket'
        : /device/.test(name)
          ? 'device'
          : null;
    // A special file the machine could not make is a failed precondition, not a pass: the attempt never ran.
    if (needs !== null)
      expect(
        fx.specials[needs],
        `the fixture could not make its ${needs} (mkfifo, python3, mknod as root)`,
      ).toBe(true);
    const before = snapshot(fx.base);
    const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    const err = await run(ws, fx).then(
      () => null,
      (e: unknown) => e,
    );
    if (expected === 'escape') {
      expect(err).toBeInstanceOf(PathEscapeError);
      expect((err as PathEscapeError).code).toBe('PATH_ESCAPE');
    } else {
      expect(err).toBeInstanceOf(PathRefusedError);
      expect((err as PathRefusedError).code).toBe('PATH_REFUSED');
      expect((err as PathRefusedError).reason).toBe(expected);
    }
    expect((err as Error).message).toMatch(/path .* (leaves the workspace root|refused)/);
    expect(await ws.changes()).toEqual([]);
    // Includes the staging dir: a refused call must not even create the staging area.
    expect(snapshot(fx.base)).toEqual(before);
  });
});

type Literal = [name: string, input: string, realName: string];

const literals: Literal[] = [
  ['URL-encoded %2e%2e is a plain name', '%2e%2e/%2e%2e/outside/x.txt', '%2e%2e/%2e%2e/outside/x.txt'],
  ['URL-encoded slash stays in one name', '%2e%2e%2f%2e%2e%2foutside', '%2e%2e%2f%2e%2e%2foutside'],
  ['two-dot leader lookalike (U+2025)', '\u2025/\u2025/outside/x', '\u2025/\u2025/outside/x'],
  ['fullwidth full stops (U+FF0E)', '\uff0e\uff0e/outside/x', '\uff0e\uff0e/outside/x'],
  ['division slash lookalike (U+2215)', '..\u2215..\u2215outside', '..\u2215..\u2215outside'],
  ['three dots is a name, not a climb', '.../outside/x', '.../outside/x'],
  ['.. that stays inside resolves inside', 'dir/sub/../../inside.txt', 'inside.txt'],
  ['absolute path inside the root is accepted', '<root>/dir/abs-ok.txt', 'dir/abs-ok.txt'],
];

describe('confinement: lookalikes and encodings are taken literally and stay inside', () => {
  it.each(literals)('%s', async (_name, input, realName) => {
    const f = makeFixture();
    try {
      const outsideBefore = snapshot(f.outside);
      const rootBefore = snapshot(f.root);
      const p = input.replace('<root>', f.root);
      const ws = await StagedWorkspace.open({ root: f.root, stagingDir: f.staging });
      const dir = path.posix.normalize(path.posix.dirname(p));
      if (dir !== '.' && dir !== f.root) await ws.mkdir(dir, { recursive: true });
      await ws.writeFile(p, 'literal');
      expect(await ws.readFile(realName, 'utf8')).toBe('literal');
      expect(snapshot(f.root)).toEqual(rootBefore);
      await ws.commit();
      expect(fs.readFileSync(path.join(f.root, realName), 'utf8')).toBe('literal');
      expect(snapshot(f.outside)).toEqual(outsideBefore);
      expect(fs.readdirSync(f.base).sort()).toEqual(['outside', 'root']);
    } finally {
      f.cleanup();
    }
  });
});

describe('confinement: the real tree changing under a staged path', () => {
  it('refuses to commit through a parent swapped for a symlink after staging', async () => {
    const f = makeFixture();
    try {
      const outsideBefore = snapshot(f.outside);
      const ws = await StagedWorkspace.open({ root: f.root, stagingDir: f.staging });
      await ws.writeFile('dir/new.txt', 'staged');
      fs.rmSync(path.join(f.root, 'dir'), { recursive: true });
      fs.symlinkSync('../outside', path.join(f.root, 'dir'));
      await expect(ws.commit()).rejects.toBeInstanceOf(PathEscapeError);
      expect(snapshot(f.outside)).toEqual(outsideBefore);
    } finally {
      f.cleanup();
    }
  });

  it("hardLinks: 'copy-on-write' breaks the link at commit: the outside inode keeps its bytes", async () => {
    const f = makeFixture({ hostile: true });
    try {
      const secret = path.join(f.outside, 'secret.txt');
      const ws = await StagedWorkspace.open({
        root: f.root,
        stagingDir: f.staging,
        hardLinks: 'copy-on-write',
      });
      expect(await ws.readFile('hard', 'utf8')).toBe('TOP SECRET\n');
      await ws.appendFile('hard', 'changed\n');
      await ws.commit();
      expect(fs.readFileSync(secret, 'utf8')).toBe('TOP SECRET\n');
      expect(fs.statSync(secret).nlink).toBe(1);
      expect(fs.readFileSync(path.join(f.root, 'hard'), 'utf8')).toBe('TOP SECRET\nchanged\n');
    } finally {
      f.cleanup();
    }
  });

  it('a hand-edited manifest whose path escapes is rejected as corrupt, never applied', async () => {
    const f = makeFixture();
    try {
      const ws = await StagedWorkspace.open({ root: f.root, stagingDir: f.staging });
      await ws.writeFile('a.txt', 'new');
      const mf = path.join(f.staging, 'manifest.json');
      const m = JSON.parse(fs.readFileSync(mf, 'utf8'));
      m.entries['../outside/secret.txt'] = m.entries['a.txt'];
      fs.writeFileSync(mf, JSON.stringify(m));
      const before = snapshot(f.outside);
      await expect(StagedWorkspace.open({ root: f.root, stagingDir: f.staging })).rejects.toMatchObject({
        code: 'STAGING_CORRUPT',
      });
      expect(snapshot(f.outside)).toEqual(before);
    } finally {
      f.cleanup();
    }
  });
});
