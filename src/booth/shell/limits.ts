/**
 * What a shell command may use, and by which mechanism each limit is enforced on this machine: a control group
 * (cgroup v2, or v1 on hybrid hosts; src/booth/shell/cgroups.ts) where the worker can make one, else an rlimit
 * set on the command's first process (and inherited by everything it starts), else nothing, said so. The booth's
 * status and every shell result name the mechanism in force.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { type CgroupLayout, probeCgroups } from './cgroups';

export interface ShellLimits {
  /** CPU time of all the command's processes together, in seconds (default 60). */
  cpuSeconds?: number;
  /** Memory of all the command's processes together, in bytes (default 1 GiB). */
  memoryBytes?: number;
  /** Processes (and threads) alive at once (default 256). */
  processes?: number;
  /** Bytes the command may write to stdout and stderr together before it is killed (default 16 MiB). */
  outputBytes?: number;
  /** The largest file the command may write, in bytes (default 256 MiB, the default of staged bytes per run). */
  fileBytes?: number;
}

export const DEFAULT_SHELL_LIMITS: Required<ShellLimits> = {
  cpuSeconds: 60,
  memoryBytes: 1024 * 1024 * 1024,
  processes: 256,
  outputBytes: 16 * 1024 * 1024,
  fileBytes: 256 * 1024 * 1024,
};

/** How one limit is enforced: by a control group, by an rlimit, by the worker reading the pipes, or not at all. */
export type LimitMechanism = 'cgroup2' | 'cgroup1' | 'rlimit' | 'worker' | 'none';

export interface ShellEnforcement {
  cpu: LimitMechanism;
  memory: LimitMechanism;
  processes: LimitMechanism;
  output: LimitMechanism;
  fileSize: LimitMechanism;
  /** How every process of a command is killed at once: its cgroup v2 `cgroup.kill`, its v1 groups, or its tree. */
  kill: 'cgroup2' | 'cgroup1' | 'process-tree';
  /** Why a limit is not enforced by a cgroup, or is weaker than asked, one line each. */
  notes: string[];
}

export interface LimitPlan {
  limits: Required<ShellLimits>;
  enforcement: ShellEnforcement;
  /** The cgroup layout the command's groups are made in (null: rlimits only). */
  layout: CgroupLayout | null;
  /** `prlimit` options for the command's first process. */
  rlimits: string[];
}

export function resolveLimits(limits: ShellLimits | undefined): Required<ShellLimits> {
  const out = { ...DEFAULT_SHELL_LIMITS, ...(limits ?? {}) };
  for (const [k, v] of Object.entries(out))
    if (typeof v !== 'number' || !(v > 0))
      throw new TypeError(`shell limit ${k} must be a positive number, got ${String(v)}`);
  return out;
}

/** Processes the worker's user has now: RLIMIT_NPROC counts all of them, not the command's alone. */
function userProcesses(uid: number): number {
  let n = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const m = /^Uid:\s+(\d+)/m.exec(status);
      if (m && Number(m[1]) === uid) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

/**
 * Chooses the mechanism of each limit. `useCgroups: false` forces the rlimit fallback (what a machine without
 * usable control groups gets).
 */
export async function planLimits(
  limits: Required<ShellLimits>,
  options: { useCgroups?: boolean } = {},
): Promise<LimitPlan> {
  const layout = options.useCgroups === false ? null : await probeCgroups();
  const c = layout?.controllers ?? {};
  const notes = [...(layout?.notes ?? [])];
  if (options.useCgroups === false) notes.push('control groups not used (useCgroups: false)');
  const root = process.getuid?.() === 0;
  const rlimits = [`--fsize=${limits.fileBytes}:${limits.fileBytes}`];
  const enforcement: ShellEnforcement = {
    cpu: c.cpu?.version ?? 'rlimit',
    memory: c.memory?.version ?? 'rlimit',
    processes: c.pids?.version ?? (root ? 'none' : 'rlimit'),
    output: 'worker',
    fileSize: 'rlimit',
    kill: layout?.v2 ? 'cgroup2' : c.pids || c.memory ? 'cgroup1' : 'process-tree',
    notes,
  };
  if (enforcement.cpu === 'rlimit') {
    rlimits.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`);
    notes.push('CPU time by RLIMIT_CPU: per process, not the command as a whole');
  }
  if (enforcement.memory === 'rlimit') {
    rlimits.push(`--as=${limits.memoryBytes}:${limits.memoryBytes}`);
    notes.push(
      'memory by RLIMIT_AS: address space per process (a program reserving more than it uses fails early), and an allocation past it fails inside the command rather than as a typed error',
    );
  }
  if (enforcement.processes === 'rlimit') {
    const uid = process.getuid!();
    const nproc = userProcesses(uid) + limits.processes;
    rlimits.push(`--nproc=${nproc}:${nproc}`);
    notes.push(
      `processes by RLIMIT_NPROC: it counts every process of user ${uid}, so it is set to those running now plus ${limits.processes}`,
    );
  } else if (enforcement.processes === 'none')
    notes.push('processes not limited: no pids cgroup, and RLIMIT_NPROC does not apply to root');
  return { limits, enforcement, layout, rlimits };
}
