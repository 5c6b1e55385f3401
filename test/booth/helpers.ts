import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { StagedWorkspace } from '../../src/booth';

export interface Fixture {
  base: string;
  root: string;
  outside: string;
  staging: string;
  /** Which special files could be created here (mknod needs privileges). */
  specials: { fifo: boolean; socket: boolean; device: boolean };
  cleanup(): void;
}

/**
 * A temp tree with the workspace root and a sibling "outside" directory that every escape attempt aims at.
 * `hostile` adds the links and special files the confinement tests poke at.
 */
export function makeFixture(opts: { hostile?: boolean; stagingInside?: boolean } = {}): Fixture {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-booth-')));
  const root = path.join(base, 'root');
  const outside = path.join(base, 'outside');
  const w = (p: string, data: string | Buffer, mode = 0o644) => {
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, data);
    fs.chmodSync(p, mode);
  };
  w(path.join(root, 'a.txt'), 'alpha\n');
  w(path.join(root, 'dir/b.txt'), 'bravo\nline 2\nline 3\n');
  w(path.join(root, 'dir/sub/c.bin'), Buffer.from([0, 1, 2, 255, 0, 7]));
  w(path.join(root, 'exec.sh'), '#!/bin/sh\necho hi\n', 0o755);
  fs.mkdirSync(path.join(root, 'empty'));
  w(path.join(outside, 'secret.txt'), 'TOP SECRET\n');
  w(path.join(outside, 'dir/x.txt'), 'outside x\n');
  // Folder modes spelled out, so the trees the tests expect do not depend on the umask.
  for (const d of [
    root,
    path.join(root, 'dir'),
    path.join(root, 'dir/sub'),
    path.join(root, 'empty'),
    outside,
  ])
    fs.chmodSync(d, 0o755);
  fs.chmodSync(path.join(outside, 'dir'), 0o755);
  const specials = { fifo: false, socket: false, device: false };
  if (opts.hostile) {
    fs.symlinkSync('../outside', path.join(root, 'link-out'));
    fs.symlinkSync('../../outside/secret.txt', path.join(root, 'dir/link-secret'));
    fs.symlinkSync('/etc', path.join(root, 'abs-link'));
    fs.symlinkSync('dir', path.join(root, 'link-in'));
    fs.symlinkSync('../outside/not-yet', path.join(root, 'dangling-out'));
    fs.linkSync(path.join(outside, 'secret.txt'), path.join(root, 'hard'));
    specials.fifo = tryRun('mkfifo', [path.join(root, 'fifo')]);
    specials.socket = tryRun('python3', [
      '-c',
      'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])',
      path.join(root, 'sock'),
    ]);
    specials.device = tryRun('mknod', [path.join(root, 'null'), 'c', '1', '3']);
  }
  const staging = opts.stagingInside ? path.join(root, '.jukebox-staging') : path.join(base, 'staging');
  return {
    base,
    root,
    outside,
    staging,
    specials,
    cleanup: () => fs.rmSync(base, { recursive: true, force: true }),
  };
}

function tryRun(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A file's bytes as a test can spell them: the text when they are UTF-8, else `hex:` and the bytes in hex. */
function content(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : `hex:${bytes.toString('hex')}`;
}

/**
 * Every entry under `dir` as `dir:MODE`, `file:MODE:CONTENT` (content() above), `link:TARGET` or `special:MODE`:
 * equal trees are byte-for-byte equal, and a test can write the tree it expects literally.
 */
export function snapshot(dir: string, skip: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const abs = path.join(dir, rel);
    for (const name of fs.readdirSync(abs).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`;
      if (skip.includes(r)) continue;
      const st = fs.lstatSync(path.join(dir, r));
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[r] = `link:${fs.readlinkSync(path.join(dir, r))}`;
      else if (st.isDirectory()) {
        out[r] = `dir:${mode}`;
        walk(r);
      } else if (st.isFile()) out[r] = `file:${mode}:${content(fs.readFileSync(path.join(dir, r)))}`;
      else out[r] = `special:${mode}`;
    }
  };
  walk('');
  return out;
}

/** The merged view as the workspace API shows it, in the same shape as snapshot() of a real tree. */
export async function viewSnapshot(ws: StagedWorkspace): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string) => {
    for (const name of await ws.readdir(rel === '' ? '.' : rel)) {
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = await ws.stat(r);
      const mode = st.mode.toString(8);
      if (st.type === 'dir') {
        out[r] = `dir:${mode}`;
        await walk(r);
      } else out[r] = `file:${mode}:${content(Buffer.from(await ws.readFile(r)))}`;
    }
  };
  await walk('');
  return out;
}

/** The fixture's root as makeFixture() writes it. */
export const FIXTURE_TREE: Readonly<Record<string, string>> = {
  'a.txt': 'file:644:alpha\n',
  dir: 'dir:755',
  'dir/b.txt': 'file:644:bravo\nline 2\nline 3\n',
  'dir/sub': 'dir:755',
  'dir/sub/c.bin': 'file:644:hex:000102ff0007',
  empty: 'dir:755',
  'exec.sh': 'file:755:#!/bin/sh\necho hi\n',
};

/** The fixture's sibling folder that escapes aim at. */
export const OUTSIDE_TREE: Readonly<Record<string, string>> = {
  dir: 'dir:755',
  'dir/x.txt': 'file:644:outside x\n',
  'secret.txt': 'file:644:TOP SECRET\n',
};

/**
 * The root after stageEverything() is committed, spelled out: a.txt rewritten, new.txt with its 600 mode,
 * dir/sub and its file gone, exec.sh renamed to bin.sh with its exec bit, made/deep made, dir/b.txt chmodded,
 * the real empty/ replaced by a new one holding only.txt.
 */
export const STAGED_EVERYTHING_TREE: Readonly<Record<string, string>> = {
  'a.txt': 'file:644:changed\n',
  'bin.sh': 'file:755:#!/bin/sh\necho hi\n',
  dir: 'dir:755',
  'dir/b.txt': 'file:640:bravo\nline 2\nline 3\n',
  empty: 'dir:755',
  'empty/only.txt': 'file:644:only',
  made: 'dir:755',
  'made/deep': 'dir:755',
  'made/deep/f.txt': 'file:644:deep',
  'new.txt': 'file:600:new\n',
};

/** One of every kind of staged change (write, mode, delete, rename, mkdir, chmod, replace a dir): the set the
 * commit and discard tests apply to the standard fixture. */
export async function stageEverything(w: StagedWorkspace) {
  await w.writeFile('a.txt', 'changed\n');
  await w.writeFile('new.txt', 'new\n', { mode: 0o600 });
  await w.rm('dir/sub', { recursive: true });
  await w.rename('exec.sh', 'bin.sh');
  await w.mkdir('made/deep', { recursive: true });
  await w.writeFile('made/deep/f.txt', 'deep');
  await w.chmod('dir/b.txt', 0o640);
  await w.rm('empty', { recursive: true });
  await w.mkdir('empty');
  await w.writeFile('empty/only.txt', 'only');
}
