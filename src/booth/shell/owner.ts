/**
 * Who owns a shell command's scratch folder and control groups: their names carry the boot, the pid and the
 * start time of the worker process that made them (`jbx-shell-<boot>-<pid>-<start>-<random>`), so a worker
 * starting later can tell, without any shared state, which ones belong to a process that is gone (the pid alone
 * could have been reused; the start time of that pid and the boot id say whether it is the same process).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

export const COMMAND_PREFIX = 'jbx-shell-';

const NAME_RE = /^jbx-shell-([0-9a-f]{8})-(\d+)-(\d+)-[0-9a-f]+$/;

let bootId: string | undefined;
function boot(): string {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/-/g, '').slice(0, 8);
    } catch {
      bootId = '00000000';
    }
  }
  return bootId;
}

/** Field 22 of /proc/PID/stat (after the parenthesized command name, which may hold spaces): the start time. */
export function startTimeOf(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null;
}

let own: string | undefined;
/** This process's owner tag: `<boot>-<pid>-<start>`. */
export function ownerTag(): string {
  own ??= `${boot()}-${process.pid}-${startTimeOf(process.pid) ?? '0'}`;
  return own;
}

/** A fresh name for one command's scratch folder and control groups. */
export function commandName(): string {
  return `${COMMAND_PREFIX}${ownerTag()}-${randomBytes(6).toString('hex')}`;
}

/**
 * Whether `name` is a command's, made by a process that is no longer alive (another boot, a pid that is gone or
 * now belongs to a process started at another time). Names of live owners, this process's and foreign names are
 * not orphans.
 */
export function isOrphan(name: string): boolean {
  const m = NAME_RE.exec(name);
  if (m === null) return false;
  const [, b, pid, start] = m;
  if (b !== boot()) return true;
  return startTimeOf(Number(pid)) !== start;
}
