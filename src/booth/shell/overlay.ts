/**
 * The overlay view: instead of copying the workspace, the command sees an overlayfs mount whose lower layers are
 * a small "staged layer" (the StagedWorkspace's staged files, directories and whiteouts) over the real root, and
 * whose upper layer catches every write. The mount lives in a private user + mount namespace (`unshare -Urm`),
 * so it needs no privileges and disappears with the command; the real root is a read-only lower layer. Cost is
 * O(staged changes + what the command touched), not O(workspace).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PathEscapeError, PathRefusedError, WorkspaceFsError } from '../errors';
import type { StagedWorkspace } from '../stagedWorkspace';
import { ShellSpawnError } from './errors';
import { SANDBOX_PATH } from './isolation';
import type { CommandView, ShellChange, Skipped } from './view';

let probed: boolean | undefined;

/** `sh -c` as root of a new user and mount namespace (unprivileged), whose mounts stay private to it. */
const IN_MOUNT_NAMESPACE = ['unshare', '-Urm', '--propagation', 'private', 'sh', '-c'] as const;

/** Whether an unprivileged overlay mount in a user namespace works here (kernel ≥ 5.11, userns allowed). */
export function probeOverlay(): boolean {
  if (probed !== undefined) return probed;
  const dir = spawnSync('mktemp', ['-d', path.join(os.tmpdir(), 'jbx-ovl-probe-XXXXXX')], {
    encoding: 'utf8',
  }).stdout.trim();
  try {
    const [unshare, ...inNamespace] = IN_MOUNT_NAMESPACE;
    const r = spawnSync(
      unshare,
      [
        ...inNamespace,
        'mkdir l u w m && mknod l/x c 0 0 && mount -t overlay overlay -o userxattr,lowerdir=l,upperdir=u,workdir=w m && echo ok > m/y && [ ! -e m/x ]',
      ],
      { cwd: dir, encoding: 'utf8', timeout: 10_000 },
    );
    probed = r.status === 0;
  } catch {
    probed = false;
  } finally {
    spawnSync('rm', ['-rf', dir]);
  }
  return probed;
}

/** Overlay mount options are comma- and colon-separated; such paths would need escaping, so they use the copy. */
export function overlaySafePath(p: string): boolean {
  return !/[,:\\\n]/.test(p);
}

/**
 * Writes the staged layer: staged files (contents from the blobs), directories with their modes, and a whiteout
 * (a 0/0 character device, created inside the namespace) for each deleted path and for each real child an
 * opaque staged directory hides. Returns the whiteouts to create.
 */
export async function buildLayer(ws: StagedWorkspace, layer: string): Promise<string[]> {
  const whiteouts: string[] = [];
  const ensureParent = async (rel: string) => {
    const parts = rel.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      const abs = path.join(layer, p);
      try {
        await fs.mkdir(abs);
        // The top layer's directory attributes are what the merged directory shows.
        await fs.chmod(abs, (await ws.stat(p)).mode);
      } catch (err) {
        if ((err as { code?: string }).code !== 'EEXIST') throw err;
      }
    }
  };
  await fs.chmod(layer, (await ws.stat('.')).mode);
  for (const c of await ws.changes()) {
    const abs = path.join(layer, c.path);
    await ensureParent(c.path);
    if (c.after.type === 'none') {
      await fs.rm(abs, { recursive: true, force: true });
      whiteouts.push(abs);
    } else if (c.after.type === 'dir') {
      await fs.mkdir(abs).catch((err) => {
        if (err.code !== 'EEXIST') throw err;
      });
      await fs.chmod(abs, c.after.mode);
      if (c.op === 'mkdir' || c.op === 'rename') {
        // A directory created anew hides the real children of the same path.
        const shown = new Set(await ws.readdir(c.path));
        let real: string[] = [];
        try {
          real = await fs.readdir(path.join(ws.root, c.path));
        } catch {
          real = [];
        }
        for (const name of real) if (!shown.has(name)) whiteouts.push(path.join(abs, name));
      }
    } else {
      await fs.writeFile(abs, await ws.readFile(c.path), { mode: c.after.mode });
      await fs.chmod(abs, c.after.mode);
    }
  }
  // The staging area and what else the booth owns inside the root are not the command's to see (the real root
  // is the overlay's lowest layer). The outermost of them that exist hide the rest.
  const reserved = ws.reservedPaths;
  for (const rel of reserved) {
    if (reserved.some((r) => r !== rel && rel.startsWith(`${r}/`))) continue;
    if ((await fs.lstat(path.join(ws.root, rel)).catch(() => null)) === null) continue;
    await ensureParent(rel);
    whiteouts.push(path.join(layer, rel));
  }
  return whiteouts;
}

/**
 * The overlay view in `scratch`: the staged layer in `scratch/layer`, the upper layer catching the command's
 * writes in `scratch/upper`, the mount at `scratch/merged`, all made by the wrapper inside `unshare -Urm`, which
 * then runs bwrap (`sandbox(dir)`: its arguments for a view bound from `dir`) and lists the merged view.
 */
export async function overlayView(
  ws: StagedWorkspace,
  scratch: string,
  sandbox: (dir: string) => string[],
): Promise<CommandView> {
  for (const d of ['layer', 'upper', 'work', 'merged']) await fs.mkdir(path.join(scratch, d));
  const whiteouts = await buildLayer(ws, path.join(scratch, 'layer'));
  const upper = path.join(scratch, 'upper');
  const merged = path.join(scratch, 'merged');
  const listing = path.join(scratch, 'listing');
  return {
    kind: 'overlay',
    argv: [
      ...IN_MOUNT_NAMESPACE,
      OVERLAY_SCRIPT,
      'sh',
      String(whiteouts.length),
      ...whiteouts,
      ...sandbox(merged),
    ],
    env: {
      PATH: SANDBOX_PATH,
      JBX_LOWER: `${path.join(scratch, 'layer')}:${ws.root}`,
      JBX_UPPER: upper,
      JBX_WORK: path.join(scratch, 'work'),
      JBX_MERGED: merged,
      JBX_OUT: listing,
    },
    cwd: scratch,
    contentDir: upper,
    async changes(stderr) {
      if ((await fs.stat(`${listing}.mounted`).catch(() => null)) === null)
        throw new ShellSpawnError(`the overlay view could not be mounted: ${stderr.trim()}`);
      const list = await fs.readFile(listing).catch(() => null);
      if (list === null) throw new ShellSpawnError(`the overlay view could not be scanned: ${stderr.trim()}`);
      return scanUpper(ws, upper, list);
    },
  };
}

/**
 * Runs inside `unshare -Urm`: makes the whiteouts, mounts the overlay, runs bwrap (the remaining arguments), then
 * lists every directory of the upper layer as the merged view shows it, which is how deletions (whiteouts or
 * opaque directories alike) are found without reading overlayfs' private xattrs. The listing is the shell's own
 * globbing and printf, no process per directory (a `find` a directory cost more than the command it lists);
 * the three globs are every name but `.` and `..`, and a directory it cannot read fails the scan.
 */
export const OVERLAY_SCRIPT = `set -e
n=$1; shift
while [ "$n" -gt 0 ]; do mknod "$1" c 0 0; shift; n=$((n-1)); done
mount -t overlay overlay -o "userxattr,metacopy=off,lowerdir=$JBX_LOWER,upperdir=$JBX_UPPER,workdir=$JBX_WORK" "$JBX_MERGED"
: > "$JBX_OUT.mounted"
set +e
"$@"
rc=$?
list() {
  [ -r "$JBX_MERGED/$1" ] && [ -x "$JBX_MERGED/$1" ] || return 1
  printf '%s\\0' "$1"
  for f in "$JBX_MERGED/$1"/* "$JBX_MERGED/$1"/.[!.]* "$JBX_MERGED/$1"/..?*; do
    if [ -e "$f" ] || [ -h "$f" ]; then printf '%s\\0' "\${f##*/}"; fi
  done
  printf '\\0'
  for f in "$JBX_UPPER/$1"/* "$JBX_UPPER/$1"/.[!.]* "$JBX_UPPER/$1"/..?*; do
    if [ -d "$f" ] && [ ! -h "$f" ]; then list "$1/\${f##*/}" || return 1; fi
  done
}
list . > "$JBX_OUT" || exit 125
exit $rc
`;

function parseListing(buf: Buffer): Map<string, Set<string>> {
  const parts = buf.toString('utf8').split('\0');
  const out = new Map<string, Set<string>>();
  let i = 0;
  while (i < parts.length - 1) {
    const d = parts[i++]!;
    const names = new Set<string>();
    while (i < parts.length && parts[i] !== '') names.add(parts[i++]!);
    i++;
    const rel = d === '.' ? '' : d.replace(/^\.\//, '');
    out.set(rel, names);
  }
  return out;
}

type Before = { type: 'file' | 'dir'; mode: number } | { type: 'none' } | { type: 'hidden' };

async function before(ws: StagedWorkspace, p: string): Promise<Before> {
  try {
    const st = await ws.stat(p === '' ? '.' : p);
    return { type: st.type, mode: st.mode };
  } catch (err) {
    if (err instanceof WorkspaceFsError) return { type: 'none' };
    if (err instanceof PathRefusedError || err instanceof PathEscapeError) return { type: 'hidden' };
    throw err;
  }
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Turns the upper layer and the merged listing into staged operations, in the same shape as the copy's scan. */
export async function scanUpper(
  ws: StagedWorkspace,
  upper: string,
  listing: Buffer,
): Promise<{ changes: ShellChange[]; skipped: Skipped[] }> {
  const merged = parseListing(listing);
  const deletes: string[] = [];
  const changes: ShellChange[] = [];
  const skipped: Skipped[] = [];
  for (const [dir, names] of merged) {
    const b = await before(ws, dir);
    if (b.type !== 'dir') continue;
    for (const name of await ws.readdir(dir === '' ? '.' : dir)) {
      const p = dir === '' ? name : `${dir}/${name}`;
      if (!names.has(name) && !ws.isReserved(p)) deletes.push(p);
    }
  }
  const walk = async (rel: string) => {
    for (const name of (await fs.readdir(path.join(upper, rel))).sort()) {
      const p = rel === '' ? name : `${rel}/${name}`;
      const st = await fs.lstat(path.join(upper, p));
      if (st.isCharacterDevice() && st.rdev === 0) continue;
      const b = await before(ws, p);
      const mode = st.mode & 0o7777;
      if (st.isSymbolicLink() || (!st.isFile() && !st.isDirectory())) {
        skipped.push({ path: p, reason: st.isSymbolicLink() ? 'symlink' : 'special-file' });
        if (b.type === 'file' || b.type === 'dir') deletes.push(p);
        continue;
      }
      if (st.isDirectory()) {
        if (b.type === 'file') deletes.push(p);
        if (b.type === 'dir') {
          if (b.mode !== mode) changes.push({ path: p, op: 'chmod', mode });
        } else changes.push({ path: p, op: 'mkdir', mode });
        await walk(p);
        continue;
      }
      if (b.type === 'dir') deletes.push(p);
      const data = await fs.readFile(path.join(upper, p));
      const hash = sha256(data);
      if (b.type === 'file') {
        // overlayfs copies a file up when it is opened for writing or chmod-ed, changed or not.
        let old: string | null = null;
        try {
          old = sha256(await ws.readFile(p));
        } catch {
          old = null;
        }
        if (old === hash) {
          if (b.mode !== mode) changes.push({ path: p, op: 'chmod', mode });
          continue;
        }
      }
      changes.push({ path: p, op: 'write', size: data.byteLength, hash, mode });
    }
  };
  await walk('');
  const top = [...new Set(deletes)]
    .sort()
    .filter((p, _, all) => !all.some((q) => q !== p && p.startsWith(`${q}/`)))
    .map((p): ShellChange => ({ path: p, op: 'delete' }));
  return { changes: [...top, ...changes], skipped };
}
