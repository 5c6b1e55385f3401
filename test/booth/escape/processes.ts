/** Processes of this machine as the escape suite looks for them: by a marker in their command line. */
import fs from 'node:fs';

/** Pids whose command line contains `marker`. */
export function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    if (cmdline.includes(marker)) out.push(Number(name));
  }
  return out;
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
