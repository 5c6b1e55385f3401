import fs from 'node:fs';

/**
 * Pids of this machine's processes with `marker` as one of their command-line arguments, sandboxed ones
 * included (a PID namespace hides nothing from the host's /proc). Tests run commands with a unique argument,
 * such as a sleep of an unlikely length, to find them.
 */
export function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(marker))
        pids.push(Number(entry));
    } catch {
      // It exited meanwhile.
    }
  }
  return pids;
}

/** A sleep length no other process on the machine is likely to use, as a marker for processesWith. */
export const uniqueSleep = (): string => `${Math.floor(1_000 + Math.random() * 8_000)}.${process.pid}`;

/** Pids whose command line contains `text` anywhere (in an argument, across arguments joined by spaces). */
export function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(text))
        pids.push(Number(entry));
    } catch {
      // It exited meanwhile.
    }
  }
  return pids;
}

/** The parent of `pid`, or null once it has exited (field 4 of /proc/PID/stat, after the command's name). */
export function parentOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** Polls until `check` holds or `ms` pass; returns whether it held. */
export async function within(ms: number, check: () => boolean, everyMs = 25): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (check()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The control-group folders named `name` anywhere under /sys/fs/cgroup (every hierarchy, any depth). */
export function cgroupsNamed(name: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = `${dir}/${e.name}`;
      if (e.name === name) out.push(p);
      else if (depth < 6) walk(p, depth + 1);
    }
  };
  walk('/sys/fs/cgroup', 0);
  return out;
}

/** Whether `pid` has exited (gone, or a zombie waiting to be reaped): read from its stat, which takes no lock. */
export function hasExited(pid: number): boolean {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return true;
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

/**
 * Watches `pids` for `ms` from `since` (a performance.now() reading): when each exited, in ms after `since`, or
 * null for one still running at the end. Stops as soon as all have exited.
 */
export async function exitTimes(
  pids: readonly number[],
  since: number,
  ms: number,
): Promise<Map<number, number | null>> {
  const out = new Map<number, number | null>(pids.map((p) => [p, null]));
  for (;;) {
    const now = performance.now();
    for (const pid of pids) if (out.get(pid) === null && hasExited(pid)) out.set(pid, now - since);
    if ([...out.values()].every((t) => t !== null) || now - since >= ms) return out;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A process as /proc shows it: pid, parent, state and command line, for a failure's message. */
export function describeProcess(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return `${pid} (parent ${ppid}, state ${state}): ${cmdline}`;
  } catch {
    return `${pid}: exited`;
  }
}
