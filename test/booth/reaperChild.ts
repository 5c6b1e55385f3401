/**
 * A stand-in for a worker (node --import tsx), so a test can SIGKILL it: makes a command's control groups the
 * way a shell command's are made, starts the reaper, and puts into the groups processes that nothing but the
 * reaper can end (a session of their own, no parent-death signal, no PID namespace): `sleep <marker>` and four
 * busy loops that keep both cores of the machine busy. Prints `ready <group name> <reaper pid>`.
 */
import { spawn } from 'node:child_process';
import { makeGroups, probeCgroups } from '../../src/booth/shell/cgroups';
import { commandName } from '../../src/booth/shell/owner';
import { ensureReaper, reaperPid } from '../../src/booth/shell/reaper';

async function main(): Promise<void> {
  const marker = process.argv[2]!;
  const layout = await probeCgroups();
  const name = commandName();
  const groups = await makeGroups(layout, name, { memoryBytes: 1024 ** 3, processes: 64 });
  if (groups === null) throw new Error('no control groups here');
  ensureReaper(layout);
  const script = [
    'for f in "$@"; do echo $$ > "$f" || exit 1; done',
    `for i in 1 2 3 4; do sh -c 'while :; do :; done' spin${marker} & done`,
    `exec sleep ${marker}`,
  ].join('\n');
  const cmd = spawn('/bin/sh', ['-c', script, 'sh', ...groups.procs], { stdio: 'ignore', detached: true });
  cmd.unref();
  console.log(`ready ${name} ${reaperPid()}`);
  setInterval(() => {}, 60_000);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
