/** What the load bench reads about another process from /proc (Linux): open files, memory, CPU time. */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';

/** Clock ticks a second of /proc/PID/stat's CPU times (USER_HZ, 100 on every Linux build this runs on). */
const TICKS_PER_SECOND = 100;

/** Open descriptors of a process, and how many of them are tape files (`.jbx`). */
export function openFiles(pid: number): { all: number; tapes: number } {
  let all = 0;
  let tapes = 0;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return { all, tapes };
  }
  for (const fd of fds) {
    all++;
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).endsWith('.jbx')) tapes++;
    } catch {
      // Closed between the listing and the readlink.
    }
  }
  return { all, tapes };
}

function statusField(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  if (!line) throw new Error(`/proc/${pid}/status has no ${field} line`);
  return Number(/(\d+)\s*kB/.exec(line)?.[1]) * 1024;
}

/** The process's peak resident set since it started or since resetPeakRss (the kernel's VmHWM), in MiB. */
export function peakRssMiB(pid: number): number {
  return statusField(pid, 'VmHWM') / 2 ** 20;
}

/**
 * Starts the peak resident set over from the current one (writing 5 to clear_refs, Linux 4.0+), so a level's
 * peak leaves out start-up and warm-up. False when the kernel refuses; the peak then includes them.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** CPU time (user + system, all threads) the process has used, in ms. */
export function cpuMs(pid: number): number {
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are 14 and 15.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** The Temporal dev server process serving `port` on this host, found by its command line. */
export function devServerPid(port: number): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (args.includes('start-dev') && args[args.indexOf('--port') + 1] === String(port)) return Number(d);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined;
}

/** Samples a process's open files every `everyMs` until stopped; returns the peaks. */
export function sampleOpenFiles(
  pid: number,
  everyMs = 100,
): () => { peakFds: number; peakTapeFiles: number } {
  let peakFds = 0;
  let peakTapeFiles = 0;
  const sample = () => {
    const f = openFiles(pid);
    peakFds = Math.max(peakFds, f.all);
    peakTapeFiles = Math.max(peakTapeFiles, f.tapes);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return () => {
    clearInterval(timer);
    sample();
    return { peakFds, peakTapeFiles };
  };
}
