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
