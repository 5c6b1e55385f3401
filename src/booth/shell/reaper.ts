/**
 * The reaper: one small process per worker that kills its shell commands the moment the worker dies, all of
 * each command at once. A command's parent-death chain (src/booth/shell/commandProcess.ts) ends it link by link:
 * each link must be scheduled, exit and tear down its namespaces before the kernel signals the next, so on a
 * starved machine the last process of a command dies only after the sum of those exits. The reaper does not
 * wait for any of them: it holds one end of a socket whose other end only the worker holds, wakes when the
 * kernel closes the worker's end (as the worker exits, however it dies), writes `cgroup.kill` of every control group of the worker's commands (SIGKILL to each process in it, in one
 * step), SIGKILLs what v1 groups list until they are empty, removes the groups and exits.
 *
 * It runs `/bin/sh` builtins only until the kill is written (no fork to wait for), in a session of its own (a
 * signal to the worker's process group or terminal does not reach it) and ignoring hang-ups and termination
 * requests. The worker's commands are found by the owner tag their groups carry (src/booth/shell/owner.ts), so
 * the reaper needs no list of them. Started with the first command that has a control group; started again if it
 * died. Without control groups there is nothing to kill at once, and the chain alone ends a command.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { type CgroupLayout, groupParents } from './cgroups';
import { SANDBOX_PATH } from './isolation';
import { COMMAND_PREFIX, ownerTag } from './owner';

/**
 * `$1`: the worker's owner tag; `$2..`: the folders its commands' groups are made in. Blocks in `read` until the
 * worker's end of standard input is closed.
 */
const REAPER_SCRIPT = `trap '' HUP INT TERM
tag=$1; shift
while read -r _; do :; done
for p in "$@"; do
  for g in "$p/${COMMAND_PREFIX}$tag-"*; do
    [ -e "$g/cgroup.kill" ] && echo 1 > "$g/cgroup.kill"
  done
done
i=0
while [ $i -lt 500 ]; do
  left=
  for p in "$@"; do
    for g in "$p/${COMMAND_PREFIX}$tag-"*; do
      [ -f "$g/cgroup.procs" ] || continue
      while read -r pid; do left=1; kill -9 "$pid" 2>/dev/null; done < "$g/cgroup.procs"
    done
  done
  [ -z "$left" ] && break
  i=$((i+1))
  sleep 0.01
done
for p in "$@"; do
  for g in "$p/${COMMAND_PREFIX}$tag-"*; do
    n=0
    while [ -d "$g" ] && ! rmdir "$g" 2>/dev/null && [ $n -lt 200 ]; do n=$((n+1)); sleep 0.01; done
  done
done
`;

/** What `ps` shows for the reaper: its `$0`. */
export const REAPER_NAME = 'jukebox-shell-reaper';

let reaper: ChildProcess | null = null;

const alive = (c: ChildProcess | null): c is ChildProcess =>
  c !== null && c.pid !== undefined && c.exitCode === null && c.signalCode === null;

/**
 * Starts this worker's reaper for the groups `layout` makes, unless one is running. Called before each command
 * that has control groups: a reaper that was killed is replaced before the command starts.
 */
export function ensureReaper(layout: CgroupLayout): void {
  if (alive(reaper)) return;
  const parents = groupParents(layout);
  if (parents.length === 0) return;
  const child = spawn('/bin/sh', ['-c', REAPER_SCRIPT, REAPER_NAME, ownerTag(), ...parents], {
    cwd: '/',
    env: { PATH: SANDBOX_PATH, LANG: 'C' },
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  // Neither the reaper nor the socket keeps the worker's event loop alive; a reaper that could not start or died
  // is found dead by the next command's check.
  child.on('error', () => {});
  child.stdin!.on('error', () => {});
  (child.stdin as Socket).unref();
  child.unref();
  reaper = child;
}

/** The running reaper's pid, or null. */
export function reaperPid(): number | null {
  return alive(reaper) ? reaper.pid! : null;
}
