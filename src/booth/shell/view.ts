/**
 * The command's view of the workspace: the merged (real + staged) tree copied into a scratch directory, and the
 * scan that turns what the command left there into staged operations. A copy (rather than overlayfs) works
 * unprivileged on any filesystem; its cost grows with the workspace (docs/shadow-booth.md). `CommandView` is what
 * either view (this one, or the overlay: src/booth/shell/overlay.ts) gives the shell.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PathEscapeError, PathRefusedError } from '../errors';
import type { StagedWorkspace } from '../stagedWorkspace';

type Node =
  | { type: 'file'; mode: number; hash: string; ino: bigint; ctimeNs: bigint; size: bigint }
  | { type: 'dir'; mode: number };

export interface View {
  dir: string;
  nodes: Map<string, Node>;
  /** Paths the booth refuses to expose (symlinks, special files, shared hard links); never read as deleted. */
  hidden: Set<string>;
}

export type ShellChange =
  | { path: string; op: 'write'; size: number; hash: string; mode: number }
  | { path: string; op: 'mkdir'; mode: number }
  | { path: string; op: 'chmod'; mode: number }
  | { path: string; op: 'delete' };

export interface Skipped {
  path: string;
  reason: 'symlink' | 'special-file';
}

/** A view made for one command in its scratch folder: how to start the command in it, and what it changed. */
export interface CommandView {
  kind: 'overlay' | 'copy';
  /** The command's first link (bwrap, the overlay's wrapper, or the bare command), where and with what. */
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** Where the files the command wrote are, to be staged from. */
  contentDir: string;
  /** What the command changed; only for a command that ended by itself. `stderr`: the command's, for errors. */
  changes(stderr: string): Promise<Scan>;
}

/**
 * The copy view in `scratch`: the merged view copied to `scratch/root`. `sandbox(dir)` gives bwrap's arguments
 * for a view bound from `dir`; without isolation the command runs bare, with its cwd in the copy.
 */
export async function copyView(
  ws: StagedWorkspace,
  scratch: string,
  o: {
    sandbox: ((dir: string) => string[]) | null;
    argv: string[];
    env: Record<string, string>;
    cwd: string;
  },
): Promise<CommandView> {
  const root = path.join(scratch, 'root');
  await fs.mkdir(root);
  const view = await materialize(ws, root);
  await fs.chmod(root, (await ws.stat('.')).mode);
  return {
    kind: 'copy',
    argv: o.sandbox ? o.sandbox(root) : o.argv,
    env: o.env,
    cwd: o.sandbox ? scratch : path.join(root, o.cwd),
    contentDir: root,
    changes: () => scan(view),
  };
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export async function materialize(ws: StagedWorkspace, dir: string): Promise<View> {
  const nodes = new Map<string, Node>();
  const hidden = new Set<string>();
  const walk = async (rel: string) => {
    const names = await ws.readdir(rel === '' ? '.' : rel);
    for (const name of names) {
      const p = rel === '' ? name : `${rel}/${name}`;
      const abs = path.join(dir, p);
      try {
        const st = await ws.stat(p);
        if (st.type === 'dir') {
          await fs.mkdir(abs, { mode: 0o700 });
          await walk(p);
          await fs.chmod(abs, st.mode);
          nodes.set(p, { type: 'dir', mode: st.mode });
        } else {
          const data = await ws.readFile(p);
          await fs.writeFile(abs, data, { mode: st.mode });
          await fs.chmod(abs, st.mode);
          const l = await fs.lstat(abs, { bigint: true });
          nodes.set(p, {
            type: 'file',
            mode: st.mode,
            hash: sha256(data),
            ino: l.ino,
            ctimeNs: l.ctimeNs,
            size: l.size,
          });
        }
      } catch (err) {
        if (err instanceof PathRefusedError || err instanceof PathEscapeError) hidden.add(p);
        else throw err;
      }
    }
  };
  await walk('');
  return { dir, nodes, hidden };
}

export interface Scan {
  changes: ShellChange[];
  skipped: Skipped[];
}

function depthFirst(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return x.length - y.length;
}

/** Compares the scratch tree after the command with the view it started from. */
export async function scan(view: View): Promise<Scan> {
  const after = new Map<string, import('node:fs').BigIntStats>();
  const walk = async (rel: string) => {
    for (const name of (await fs.readdir(path.join(view.dir, rel))).sort()) {
      const p = rel === '' ? name : `${rel}/${name}`;
      const st = await fs.lstat(path.join(view.dir, p), { bigint: true });
      after.set(p, st);
      if (st.isDirectory()) await walk(p);
    }
  };
  await walk('');
  const changes: ShellChange[] = [];
  const skipped: Skipped[] = [];
  const deleted = new Set<string>();
  const del = (p: string) => {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) if (deleted.has(parts.slice(0, i).join('/'))) return;
    deleted.add(p);
    changes.push({ path: p, op: 'delete' });
  };
  for (const p of [...view.nodes.keys()].sort(depthFirst)) if (!after.has(p)) del(p);
  for (const p of [...after.keys()].sort(depthFirst)) {
    const st = after.get(p)!;
    const before = view.nodes.get(p);
    const mode = Number(st.mode & 0o7777n);
    if (st.isSymbolicLink() || (!st.isFile() && !st.isDirectory())) {
      skipped.push({ path: p, reason: st.isSymbolicLink() ? 'symlink' : 'special-file' });
      if (before !== undefined) del(p);
      continue;
    }
    const type = st.isDirectory() ? 'dir' : 'file';
    if (before !== undefined && before.type !== type) del(p);
    const fresh = before === undefined || before.type !== type;
    if (type === 'dir') {
      if (fresh) changes.push({ path: p, op: 'mkdir', mode });
      else if (before!.mode !== mode) changes.push({ path: p, op: 'chmod', mode });
      continue;
    }
    const b = before?.type === 'file' ? before : undefined;
    // ctime cannot be set from user space, so an unchanged (ino, ctime, size) means the file was not touched.
    if (!fresh && b !== undefined && b.ino === st.ino && b.ctimeNs === st.ctimeNs && b.size === st.size)
      continue;
    const data = await fs.readFile(path.join(view.dir, p));
    const hash = sha256(data);
    if (!fresh && b !== undefined && b.hash === hash) {
      if (b.mode !== mode) changes.push({ path: p, op: 'chmod', mode });
      continue;
    }
    changes.push({ path: p, op: 'write', size: data.byteLength, hash, mode });
  }
  return { changes, skipped };
}

/**
 * Stages the scan's operations in one batch: all of them or, if the booth refuses one, none. File contents are
 * read from `contentDir` (the copy, or the overlay's upper layer).
 */
export async function stage(ws: StagedWorkspace, contentDir: string, changes: ShellChange[]): Promise<void> {
  await ws.stageBatch(async () => {
    for (const c of changes) {
      if (c.op === 'delete') await ws.rm(c.path, { recursive: true });
      else if (c.op === 'mkdir') await ws.mkdir(c.path, { mode: c.mode });
      else if (c.op === 'chmod') await ws.chmod(c.path, c.mode);
      else await ws.writeFile(c.path, await fs.readFile(path.join(contentDir, c.path)), { mode: c.mode });
    }
  });
}
