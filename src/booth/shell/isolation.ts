/** Whether bubblewrap can build a sandbox here, probed once per process by running one. */
import { spawnSync } from 'node:child_process';

export type Isolation = 'bwrap' | 'none';

type Probe = { ok: true } | { ok: false; detail: string };
const probed = new Map<string, Probe>();

export function probeBwrap(bwrap = 'bwrap'): Probe {
  const known = probed.get(bwrap);
  if (known !== undefined) return known;
  const r = spawnSync(
    bwrap,
    ['--ro-bind', '/', '/', '--unshare-all', '--cap-drop', 'ALL', '--die-with-parent', 'true'],
    {
      encoding: 'utf8',
      timeout: 10_000,
    },
  );
  let probe: Probe;
  if (r.error !== undefined)
    probe = {
      ok: false,
      detail:
        (r.error as NodeJS.ErrnoException).code === 'ENOENT'
          ? 'bwrap (bubblewrap) is not installed'
          : r.error.message,
    };
  else if (r.status !== 0)
    probe = {
      ok: false,
      detail: `bwrap cannot create namespaces here (${r.stderr.trim() || `exit ${r.status}`}); user namespaces may be disabled`,
    };
  else probe = { ok: true };
  probed.set(bwrap, probe);
  return probe;
}

let tools: Probe | undefined;

/**
 * Whether util-linux's setpriv (the parent-death signal that ends a command with its worker) and prlimit (its
 * rlimits) are here; every command's first process is `setpriv --pdeathsig KILL`, then `prlimit`.
 */
export function probeProcessTools(): Probe {
  if (tools !== undefined) return tools;
  for (const tool of ['setpriv', 'prlimit']) {
    const r = spawnSync(tool, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (r.error !== undefined || r.status !== 0) {
      tools = {
        ok: false,
        detail: `${tool} (util-linux) is not available (${r.error?.message ?? `exit ${r.status}`}); without it a command would outlive a killed worker`,
      };
      return tools;
    }
  }
  tools = { ok: true };
  return tools;
}

export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The sandbox: the whole host read-only, the workspace copy bound read-write at the workspace's own path (so
 * absolute paths work), private /tmp, /dev and /proc, no network unless asked, an empty environment, and the
 * command killed when the worker dies.
 */
export function bwrapArgs(o: {
  copyDir: string;
  root: string;
  cwd: string;
  network: boolean;
  env: Record<string, string>;
  argv: string[];
  /** Load the seccomp filter from fd 3 (the command's prelude opens it there). */
  seccomp?: boolean;
}): string[] {
  // No capabilities inside: as root, bwrap would otherwise keep them (mounts, raw devices) in its namespaces.
  const args = ['--unshare-all', '--cap-drop', 'ALL'];
  if (o.network) args.push('--share-net');
  args.push('--die-with-parent', '--new-session', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  args.push('--tmpfs', '/tmp', '--bind', o.copyDir, o.root, '--chdir', o.cwd, '--clearenv');
  for (const [k, v] of Object.entries(o.env)) args.push('--setenv', k, v);
  if (o.seccomp) args.push('--seccomp', '3');
  args.push('--', ...o.argv);
  return args;
}
