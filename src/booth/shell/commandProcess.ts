/**
 * One shell command's processes, from spawn to the last one's death. The command's first process is
 * `setpriv --pdeathsig KILL`: the kernel SIGKILLs it the moment the worker dies, however the worker dies
 * (SIGKILL included). It runs a short prelude that first checks the worker is still its parent (closing the race
 * with a worker that died before the signal was armed), joins the command's control groups, opens the seccomp
 * filter for bubblewrap, then execs `prlimit` (the rlimits) and the view's own chain: `unshare` + the overlay
 * script + bwrap, or bwrap, or the bare command. Each link dies with the one before it (the parent-death signal
 * survives `exec` and the user namespace `unshare` makes; bwrap has `--die-with-parent`, and everything inside
 * its PID namespace dies with the namespace's first process), so a worker SIGKILL leaves nothing of the command.
 * Where the command has control groups, the worker's reaper (src/booth/shell/reaper.ts) kills every process in
 * them at the same moment, without waiting for the chain's links to die one after the other.
 *
 * While it runs, its control groups are read every 100 ms: CPU time past the limit, a fork the pids limit refused
 * or a process the memory limit OOM-killed ends the command (all of it: `cgroup.kill`, or each pid of its v1
 * groups, and its process group). So does stdout + stderr past the output limit, the wall-clock timeout and the
 * caller's abort signal. With rlimits alone, the kernel ends a process past its CPU or file-size limit (SIGXCPU,
 * SIGXFSZ), which the exit status shows.
 */
import { spawn } from 'node:child_process';
import { type CommandGroups, makeGroups } from './cgroups';
import type { LimitPlan } from './limits';
import { ensureReaper } from './reaper';

/** The limit a command passed, as ShellLimitError names it. */
export type PassedLimit = 'cpu' | 'memory' | 'processes' | 'output' | 'fileSize';

/** How a command ended and what it printed, as a ShellResult reports it. */
export interface CommandOutput {
  /** null when the command was killed by a signal. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
}

export interface CommandOutcome extends CommandOutput {
  /** The limit whose passing ended the command, or null. */
  limit: PassedLimit | null;
  /** The prelude could not start the command (its stderr says why). */
  preludeFailed: string | null;
}

const PRELUDE_EXIT = 125;
const PRELUDE_MARK = 'jukebox shell prelude:';

/**
 * `$1..`: the rest of the chain. Runs as the command's first process, right after setpriv armed the parent-death
 * signal. The environment it reads is removed before the exec, so the command never sees it.
 */
const PRELUDE = `read -r _ _ _ ppid _ < /proc/$$/stat
if [ "$ppid" != "$JBX_OWNER" ]; then echo "${PRELUDE_MARK} the worker is gone" >&2; exit ${PRELUDE_EXIT}; fi
set -f
IFS='
'
for f in $JBX_CGROUP_PROCS; do
  echo $$ > "$f" || { echo "${PRELUDE_MARK} cannot join control group $f" >&2; exit ${PRELUDE_EXIT}; }
done
unset IFS
set +f
if [ -n "$JBX_SECCOMP" ]; then
  exec 3< "$JBX_SECCOMP" || { echo "${PRELUDE_MARK} cannot open the seccomp filter" >&2; exit ${PRELUDE_EXIT}; }
fi
unset JBX_OWNER JBX_CGROUP_PROCS JBX_SECCOMP
exec "$@"
`;

const POLL_MS = 100;
const SIGXCPU_EXIT = 128 + 24;
const SIGXFSZ_EXIT = 128 + 25;

export interface CommandOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Bytes kept of stdout and of stderr each. */
  keepOutputBytes: number;
  plan: LimitPlan;
  /** The command's name (owner tag included): its control groups are named after it. */
  name: string;
  /** The filter file bwrap reads on fd 3, or null. */
  seccompFile: string | null;
  signal?: AbortSignal;
}

export async function runCommand(o: CommandOptions): Promise<CommandOutcome> {
  const { limits, layout, enforcement } = o.plan;
  const groups = layout
    ? await makeGroups(layout, o.name, { memoryBytes: limits.memoryBytes, processes: limits.processes })
    : null;
  // Before the command starts: should the worker die while it runs, the reaper kills all of it at once.
  if (layout && groups) ensureReaper(layout);
  try {
    return await spawnCommand(o, groups, {
      cpuByGroup: enforcement.cpu === 'cgroup2' || enforcement.cpu === 'cgroup1',
      cpuByRlimit: enforcement.cpu === 'rlimit',
    });
  } finally {
    await groups?.remove();
  }
}

function spawnCommand(
  o: CommandOptions,
  groups: CommandGroups | null,
  how: { cpuByGroup: boolean; cpuByRlimit: boolean },
): Promise<CommandOutcome> {
  const { limits } = o.plan;
  return new Promise((resolve, reject) => {
    if (o.signal?.aborted) {
      reject(o.signal.reason);
      return;
    }
    const argv = [
      'setpriv',
      '--pdeathsig',
      'KILL',
      '--',
      '/bin/sh',
      '-c',
      PRELUDE,
      'sh',
      'prlimit',
      ...o.plan.rlimits,
      '--',
      ...o.argv,
    ];
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: o.cwd,
      env: {
        ...o.env,
        JBX_OWNER: String(process.pid),
        JBX_CGROUP_PROCS: groups?.procs.join('\n') ?? '',
        JBX_SECCOMP: o.seccompFile ?? '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a kill reaches the command and everything it started outside its groups.
      detached: true,
    });
    let limit: PassedLimit | null = null;
    let timedOut = false;
    let ended = false;
    let killing: Promise<void> | null = null;
    const killAll = (): Promise<void> => {
      killing ??= (async () => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
        await groups?.kill();
      })();
      return killing;
    };
    const pass = (which: PassedLimit) => {
      if (limit === null && !timedOut) limit = which;
      void killAll();
    };
    let written = 0;
    const collect = () => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      return {
        add: (d: Buffer) => {
          written += d.byteLength;
          if (written > limits.outputBytes) pass('output');
          const room = o.keepOutputBytes - size;
          if (room <= 0) {
            truncated = true;
            return;
          }
          if (d.byteLength > room) truncated = true;
          const part = d.byteLength > room ? d.subarray(0, room) : d;
          chunks.push(part);
          size += part.byteLength;
        },
        text: () => Buffer.concat(chunks).toString('utf8'),
        truncated: () => truncated,
      };
    };
    const stdout = collect();
    const stderr = collect();
    child.stdout.on('data', stdout.add);
    child.stderr.on('data', stderr.add);

    const check = async (): Promise<void> => {
      if (groups === null) return;
      const [used, ev] = await Promise.all([how.cpuByGroup ? groups.cpuMicros() : null, groups.events()]);
      if (used !== null && used > limits.cpuSeconds * 1e6) pass('cpu');
      if (ev.forkRefused) pass('processes');
      if (ev.oomKilled) pass('memory');
    };
    let polling = false;
    const poller = setInterval(() => {
      if (polling || ended) return;
      polling = true;
      check()
        .catch(() => {})
        .finally(() => {
          polling = false;
        });
    }, POLL_MS);
    const timer = setTimeout(() => {
      if (limit === null) timedOut = true;
      void killAll();
    }, o.timeoutMs);
    const onAbort = () => void killAll();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = () => {
      ended = true;
      clearInterval(poller);
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    };
    child.once('error', (err) => {
      finish();
      reject(err);
    });
    child.once('close', (code, signal) => {
      finish();
      void (async () => {
        // A limit passed just before the end, and whatever of the command outlived its first process.
        await check().catch(() => {});
        await killAll();
        if (o.signal?.aborted) {
          reject(o.signal.reason);
          return;
        }
        const err = stderr.text();
        if (limit === null && !timedOut) {
          if (how.cpuByRlimit && (code === SIGXCPU_EXIT || signal === 'SIGXCPU')) limit = 'cpu';
          else if (code === SIGXFSZ_EXIT || signal === 'SIGXFSZ') limit = 'fileSize';
        }
        resolve({
          exitCode: code,
          signal,
          stdout: stdout.text(),
          stderr: err,
          stdoutTruncated: stdout.truncated(),
          stderrTruncated: stderr.truncated(),
          timedOut,
          limit,
          preludeFailed:
            code === PRELUDE_EXIT && err.startsWith(PRELUDE_MARK)
              ? err.slice(PRELUDE_MARK.length).trim()
              : null,
        });
      })();
    });
  });
}
