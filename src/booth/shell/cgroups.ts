/**
 * Control groups for shell commands: each command runs in groups of its own, made beside the worker's, which
 * limit its processes and memory, measure its CPU time and kill all of it at once. cgroup v2 where the worker's
 * group can hand the controllers down; cgroup v1 hierarchies where the machine still mounts them (hybrid hosts:
 * memory, pids and cpuacct under /sys/fs/cgroup/<controller>); neither where the groups cannot be made (no
 * permission, no cgroupfs), and then the shell falls back to rlimits (src/booth/shell/limits.ts). Probed once per
 * process by making and removing a group.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isCode } from '../durable';

export type Controller = 'memory' | 'pids' | 'cpu';
export type CgroupVersion = 'cgroup2' | 'cgroup1';

/** Where each controller (and the kill switch) lives for this worker: the parent folder of a command's groups. */
export interface CgroupLayout {
  /** The folder a command's group for each controller is made in, with the version that serves it. */
  controllers: Partial<Record<Controller, { version: CgroupVersion; parent: string }>>;
  /** A cgroup v2 parent for the command's group there: `cgroup.kill` ends every process in it at once. */
  v2: string | null;
  /** Why a controller is not served by a cgroup, for the booth's status. */
  notes: string[];
}

interface Mount {
  point: string;
  root: string;
  fstype: string;
  options: string[];
}

function mounts(): Mount[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const l = left.split(' ');
    const r = right.split(' ');
    out.push({
      point: l[4]!.replace(/\\040/g, ' '),
      root: l[3]!,
      fstype: r[0]!,
      options: (r[2] ?? '').split(','),
    });
  }
  return out;
}

/** This process's group per hierarchy: `0` → the v2 path, and each v1 controller → its path. */
function ownGroups(): Map<string, string> {
  const out = new Map<string, string>();
  let text = '';
  try {
    text = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') out.set('', m[3]!);
    else for (const c of m[2]!.split(',')) out.set(c, m[3]!);
  }
  return out;
}

function joinGroup(m: Mount, group: string): string {
  const rel = m.root !== '/' && group.startsWith(m.root) ? group.slice(m.root.length) : group;
  return path.join(m.point, rel);
}

async function canMake(parent: string): Promise<boolean> {
  const probe = path.join(parent, `jbx-probe-${process.pid}`);
  try {
    await fs.mkdir(probe);
  } catch (err) {
    if (isCode(err, 'EEXIST')) return true;
    return false;
  }
  await fs.rmdir(probe).catch(() => {});
  return true;
}

async function readText(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}

let probed: Promise<CgroupLayout> | undefined;

/** Which controllers this worker can give its commands, and where. Cached for the process. */
export function probeCgroups(): Promise<CgroupLayout> {
  probed ??= probe();
  return probed;
}

async function probe(): Promise<CgroupLayout> {
  const layout: CgroupLayout = { controllers: {}, v2: null, notes: [] };
  const all = mounts();
  const groups = ownGroups();
  const v2mount = all.find((m) => m.fstype === 'cgroup2');
  if (v2mount && groups.has('')) {
    const parent = joinGroup(v2mount, groups.get('')!);
    if (await canMake(parent)) {
      layout.v2 = parent;
      // cpu.stat (CPU time) exists in every v2 group, controller or not.
      layout.controllers.cpu = { version: 'cgroup2', parent };
      const available = ((await readText(path.join(parent, 'cgroup.controllers'))) ?? '').trim().split(/\s+/);
      let enabled = ((await readText(path.join(parent, 'cgroup.subtree_control'))) ?? '').trim().split(/\s+/);
      const wanted = (['memory', 'pids'] as const).filter(
        (c) => available.includes(c) && !enabled.includes(c),
      );
      if (wanted.length > 0) {
        // Allowed only where the worker's own group holds no processes, or is the root; otherwise left as is.
        await fs
          .writeFile(path.join(parent, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '))
          .catch(() => {});
        enabled = ((await readText(path.join(parent, 'cgroup.subtree_control'))) ?? '').trim().split(/\s+/);
      }
      for (const c of ['memory', 'pids'] as const) {
        if (enabled.includes(c)) layout.controllers[c] = { version: 'cgroup2', parent };
        else
          layout.notes.push(
            available.includes(c)
              ? `cgroup v2 has ${c} but the worker's group ${parent} does not hand it down (cgroup.subtree_control)`
              : `cgroup v2 at ${v2mount.point} has no ${c} controller (it is bound to a cgroup v1 hierarchy, or not delegated)`,
          );
      }
    } else layout.notes.push(`cannot make cgroup v2 groups under ${parent} (no permission or read-only)`);
  }
  const v1: Record<Controller, string> = { memory: 'memory', pids: 'pids', cpu: 'cpuacct' };
  for (const c of ['memory', 'pids', 'cpu'] as const) {
    if (layout.controllers[c] !== undefined) continue;
    const name = v1[c];
    const m = all.find((x) => x.fstype === 'cgroup' && x.options.includes(name));
    if (!m || !groups.has(name)) continue;
    const parent = joinGroup(m, groups.get(name)!);
    if (await canMake(parent)) layout.controllers[c] = { version: 'cgroup1', parent };
    else layout.notes.push(`cannot make cgroup v1 ${name} groups under ${parent}`);
  }
  return layout;
}

/** The files each version keeps a controller's figures in. */
const FILES = {
  cgroup2: { memoryMax: 'memory.max', pidsMax: 'pids.max', cpuUsage: 'cpu.stat', oom: 'memory.events' },
  cgroup1: {
    memoryMax: 'memory.limit_in_bytes',
    pidsMax: 'pids.max',
    cpuUsage: 'cpuacct.usage',
    oom: 'memory.oom_control',
  },
} as const;

export interface CommandGroups {
  /** `cgroup.procs` files the command's first process writes its pid to before it starts anything. */
  procs: string[];
  /** CPU time used so far by the command's processes (microseconds), or null without a CPU group. */
  cpuMicros(): Promise<number | null>;
  /** Whether the kernel refused a fork (pids) or killed a process for memory (oom) since the start. */
  events(): Promise<{ forkRefused: boolean; oomKilled: boolean }>;
  /** Kills every process in the groups; resolves when none is left (or after a bounded wait). */
  kill(): Promise<void>;
  /** Removes the groups (killing what is left first). */
  remove(): Promise<void>;
}

/**
 * Makes the command's groups named `name` under each parent of `layout` and sets the limits. Null when the
 * layout has no cgroup at all.
 */
export async function makeGroups(
  layout: CgroupLayout,
  name: string,
  limits: { memoryBytes: number; processes: number },
): Promise<CommandGroups | null> {
  const dirs = new Map<string, CgroupVersion>();
  const at: Partial<Record<Controller, { version: CgroupVersion; dir: string }>> = {};
  for (const [c, where] of Object.entries(layout.controllers) as [
    Controller,
    { version: CgroupVersion; parent: string },
  ][]) {
    const dir = path.join(where.parent, name);
    at[c] = { version: where.version, dir };
    dirs.set(dir, where.version);
  }
  if (layout.v2 !== null) dirs.set(path.join(layout.v2, name), 'cgroup2');
  if (dirs.size === 0) return null;
  // The groups, then their limits, each step at once: they are independent files, and a command waits for them.
  await Promise.all(
    [...dirs.keys()].map((dir) =>
      fs.mkdir(dir).catch((err) => (isCode(err, 'EEXIST') ? undefined : Promise.reject(err))),
    ),
  );
  const write = (file: string, value: string) => fs.writeFile(file, value);
  const memory = async (m: { version: CgroupVersion; dir: string }) => {
    await write(path.join(m.dir, FILES[m.version].memoryMax), String(limits.memoryBytes));
    // v1 without swap accounting limits memory only; with it, memory + swap too, so swapping does not escape.
    // After the memory limit: v1 refuses a memory + swap limit below the memory limit.
    if (m.version === 'cgroup1')
      await write(path.join(m.dir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(
        () => {},
      );
    else await write(path.join(m.dir, 'memory.swap.max'), '0').catch(() => {});
  };
  await Promise.all([
    at.memory ? memory(at.memory) : undefined,
    at.pids
      ? write(path.join(at.pids.dir, FILES[at.pids.version].pidsMax), String(limits.processes))
      : undefined,
  ]);
  const v2dir = layout.v2 === null ? null : path.join(layout.v2, name);

  const kill = () => killGroups([...dirs.keys()], v2dir);
  return {
    procs: [...dirs.keys()].map((d) => path.join(d, 'cgroup.procs')),
    async cpuMicros() {
      if (!at.cpu) return null;
      const text = await readText(path.join(at.cpu.dir, FILES[at.cpu.version].cpuUsage));
      if (text === null) return null;
      if (at.cpu.version === 'cgroup1') return Number(text.trim()) / 1000;
      const m = /^usage_usec (\d+)/m.exec(text);
      return m ? Number(m[1]) : null;
    },
    async events() {
      const [pidsText, oomText] = await Promise.all([
        at.pids ? readText(path.join(at.pids.dir, 'pids.events')) : null,
        at.memory ? readText(path.join(at.memory.dir, FILES[at.memory.version].oom)) : null,
      ]);
      return {
        forkRefused: Number(/^max (\d+)/m.exec(pidsText ?? '')?.[1] ?? 0) > 0,
        oomKilled: Number(/^oom_kill (\d+)/m.exec(oomText ?? '')?.[1] ?? 0) > 0,
      };
    },
    kill,
    async remove() {
      await kill();
      await Promise.all([...dirs.keys()].map(removeGroup));
    },
  };
}

/** rmdir of a group, retried while its last processes are being reaped. */
async function removeGroup(dir: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await fs.rmdir(dir);
      return;
    } catch (err) {
      if (isCode(err, 'ENOENT')) return;
      if (!isCode(err, 'EBUSY')) throw err;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/**
 * SIGKILLs every process in the groups `dirs`: `cgroup.kill` of the v2 one (all of them in one step, forks in
 * flight included), then what the v1 groups still list, until none is left (a fork between a read and the kill
 * shows up in the next read; the pids limit bounds how many there can be).
 */
async function killGroups(dirs: string[], v2dir: string | null): Promise<void> {
  if (v2dir !== null) await fs.writeFile(path.join(v2dir, 'cgroup.kill'), '1').catch(() => {});
  for (let i = 0; i < 200; i++) {
    const pids = new Set<number>();
    const texts = await Promise.all(dirs.map((dir) => readText(path.join(dir, 'cgroup.procs'))));
    for (const text of texts)
      for (const l of (text ?? '').split('\n')) if (l.trim() !== '') pids.add(Number(l));
    if (pids.size === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The folders a command's groups are made in under `layout`: one per hierarchy used. */
export function groupParents(layout: CgroupLayout): string[] {
  const parents = new Set<string>(Object.values(layout.controllers).map((c) => c.parent));
  if (layout.v2 !== null) parents.add(layout.v2);
  return [...parents];
}

/**
 * Kills the processes of every command group under the layout's parents whose name `orphan` accepts, then
 * removes the groups. Returns the names removed.
 */
export async function sweepGroups(
  layout: CgroupLayout,
  orphan: (name: string) => boolean,
): Promise<string[]> {
  const removed = new Set<string>();
  for (const parent of groupParents(layout)) {
    let names: string[];
    try {
      names = await fs.readdir(parent);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!orphan(name)) continue;
      const dir = path.join(parent, name);
      await killGroups([dir], parent === layout.v2 ? dir : null);
      await removeGroup(dir);
      removed.add(name);
    }
  }
  return [...removed];
}
