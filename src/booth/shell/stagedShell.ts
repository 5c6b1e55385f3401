/**
 * The shell part of the Shadow Booth: a command runs against a copy of the workspace's merged view, inside
 * bubblewrap, and whatever it leaves there becomes staged changes of the StagedWorkspace. The real workspace is
 * read-only inside the sandbox and is never written. See docs/shadow-booth.md for what isolation applies.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { printableJson } from '../../errors';
import { currentActivityTape } from '../../recorder/activityTape';
import { StagedBytesLimitError, WorkspaceFsError } from '../errors';
import type { StagedWorkspace } from '../stagedWorkspace';
import { groupParents, probeCgroups, sweepGroups } from './cgroups';
import { type CommandOutput, runCommand } from './commandProcess';
import {
  ShellChangesRefusedError,
  ShellConfigError,
  ShellIsolationUnavailableError,
  ShellLimitError,
  ShellSpawnError,
  ShellTimeoutError,
} from './errors';
import { bwrapArgs, type Isolation, probeBwrap, probeProcessTools, SANDBOX_PATH } from './isolation';
import { type LimitPlan, planLimits, resolveLimits, type ShellEnforcement, type ShellLimits } from './limits';
import { overlaySafePath, overlayView, probeOverlay } from './overlay';
import { COMMAND_PREFIX, commandName, isOrphan } from './owner';
import { buildSeccompFilter, SECCOMP_DENIED_SYSCALLS, seccompArch } from './seccomp';
import { type CommandView, copyView, type ShellChange, type Skipped, stage } from './view';

export interface StagedShellOptions {
  /**
   * `bwrap` (default): bubblewrap sandbox; refuses to run (ShellIsolationUnavailableError) where bwrap cannot
   * work. `none`: runs the command directly in the copy, with none of the sandbox's protections; opt-in only.
   */
  isolation?: Isolation;
  /** Where the per-command copies live (default the OS temp dir). */
  scratchDir?: string;
  /**
   * How the command sees the workspace. `overlay`: an overlayfs mount (staged layer over the real root) in a
   * private user namespace, O(changes). `copy`: the merged view copied per command, O(workspace). `auto`
   * (default): overlay where it works (probed once), else copy. `isolation: 'none'` always copies.
   */
  view?: 'auto' | 'overlay' | 'copy';
  /** The bubblewrap executable (default `bwrap` on PATH). */
  bwrapPath?: string;
  /** Bytes of stdout and of stderr kept (default 1 MiB each); the rest is dropped and flagged. */
  maxOutputBytes?: number;
  /**
   * What one command may use (src/booth/shell/limits.ts): CPU seconds (60), memory (1 GiB), processes (256),
   * stdout + stderr bytes (16 MiB), the size of one file (256 MiB). Passing one ends the command with
   * ShellLimitError; `status()` says which mechanism enforces each here.
   */
  limits?: ShellLimits;
  /** Enforce limits with control groups where the worker can make them (default true); false: rlimits only. */
  useCgroups?: boolean;
  /**
   * Run commands under the booth's seccomp filter (src/booth/shell/seccomp.ts; default true, on x86_64 and
   * aarch64; elsewhere `status()` says it is unavailable). Needs `isolation: 'bwrap'`.
   */
  seccomp?: boolean;
}

/** How the booth runs shell commands on this machine: the worker's start-up log prints it. */
export interface ShellStatus {
  isolation: Isolation;
  view: 'auto' | 'overlay' | 'copy';
  limits: Required<ShellLimits>;
  enforcement: ShellEnforcement;
  seccomp: { active: boolean; arch: string | null; denied: number; detail: string };
  /** What ends a command whose worker dies: the parent-death chain, and the reaper where commands have groups. */
  onWorkerDeath: { reaper: boolean; detail: string };
}

export interface ShellRunOptions {
  timeoutMs: number;
  /** Added to the sandbox's minimal environment (PATH, HOME=/tmp, LANG); the worker's own is never passed. */
  env?: Record<string, string>;
  /** Allow network access (default false: the sandbox has only a loopback interface). */
  network?: boolean;
  /** Working directory, relative to the workspace root (default the root). */
  cwd?: string;
  /** `throw` (default): a timeout throws ShellTimeoutError. `return`: resolves with `timedOut: true`. */
  onTimeout?: 'throw' | 'return';
  /** Aborting kills the command, all of it, and `run` rejects with the signal's reason; nothing is staged. */
  signal?: AbortSignal;
}

export interface ShellResult extends CommandOutput {
  argv: string[];
  cwd: string;
  /** What the command changed, now staged in the workspace (empty after a timeout). */
  changes: ShellChange[];
  /** Entries the command created that the booth cannot stage (symlinks, FIFOs); they are dropped. */
  skipped: Skipped[];
  isolation: Isolation;
  /** How the workspace was shown to the command. */
  view: 'overlay' | 'copy';
  network: boolean;
  /** Which mechanism enforced each limit for this command. */
  enforcement: ShellEnforcement;
  /** Whether the seccomp filter applied. */
  seccomp: boolean;
  durationMs: number;
}

/**
 * How this worker runs shell commands, without a workspace: the settings, `status()` (what isolates and limits
 * them here) and `sweep()` (what dead workers' commands left). A worker's booth makes one at start-up.
 */
export class ShellEnvironment {
  protected readonly isolation: Isolation;
  protected readonly scratchDir: string;
  protected readonly maxOutput: number;
  protected readonly bwrap: string;
  protected readonly view: 'auto' | 'overlay' | 'copy';
  protected readonly limits: Required<ShellLimits>;
  protected readonly useCgroups: boolean;
  protected readonly seccomp: boolean;

  constructor(options: StagedShellOptions = {}) {
    this.isolation = options.isolation ?? 'bwrap';
    if (this.isolation !== 'bwrap' && this.isolation !== 'none')
      throw new ShellConfigError(`isolation ${String(this.isolation)} is not one of 'bwrap', 'none'`);
    this.scratchDir = options.scratchDir ?? os.tmpdir();
    this.maxOutput = options.maxOutputBytes ?? 1024 * 1024;
    this.bwrap = options.bwrapPath ?? 'bwrap';
    this.view = options.view ?? 'auto';
    try {
      this.limits = resolveLimits(options.limits);
    } catch (err) {
      throw new ShellConfigError((err as Error).message, err);
    }
    this.useCgroups = options.useCgroups !== false;
    this.seccomp = options.seccomp !== false && this.isolation === 'bwrap';
  }

  /** How commands run here: isolation, the limits and what enforces each, the seccomp filter. */
  async status(): Promise<ShellStatus> {
    const plan = await this.plan();
    const arch = seccompArch();
    const active = this.seccomp && arch !== null;
    const reaper = plan.layout !== null && groupParents(plan.layout).length > 0;
    return {
      isolation: this.isolation,
      view: this.view,
      limits: this.limits,
      enforcement: plan.enforcement,
      seccomp: {
        active,
        arch,
        denied: active ? SECCOMP_DENIED_SYSCALLS.length : 0,
        detail: active
          ? `bubblewrap --seccomp with the booth's filter for ${arch}: ${SECCOMP_DENIED_SYSCALLS.length} system calls refused, clone with namespace flags refused, clone3 answered ENOSYS, TIOCSTI/TIOCLINUX refused, other ABIs killed`
          : this.isolation !== 'bwrap'
            ? "off: isolation 'none' runs without bubblewrap"
            : !this.seccomp
              ? 'off: seccomp: false in the shell config'
              : `unavailable: no syscall table for ${process.arch} (x86_64 and aarch64 have one)`,
      },
      onWorkerDeath: {
        reaper,
        detail: reaper
          ? `the reaper kills every process in the command's groups at once (${plan.enforcement.kill === 'cgroup2' ? 'cgroup.kill' : 'SIGKILL to each pid of its v1 groups'}), and the parent-death chain ends it link by link`
          : 'the parent-death chain alone ends it link by link (no control groups for commands here)',
      },
    };
  }

  protected plan(): Promise<LimitPlan> {
    return planLimits(this.limits, { useCgroups: this.useCgroups });
  }

  /**
   * Removes what commands of dead workers left in this shell's scratch folder and control groups (their names
   * carry the owner: src/booth/shell/owner.ts), killing any process still in those groups. A worker calls it at
   * start-up; live workers' commands are left alone.
   */
  async sweep(): Promise<{ scratch: string[]; groups: string[] }> {
    const scratch: string[] = [];
    let names: string[] = [];
    try {
      names = await fs.readdir(this.scratchDir);
    } catch {
      names = [];
    }
    const groups = this.useCgroups ? await sweepGroups(await probeCgroups(), isOrphan) : [];
    for (const name of names) {
      if (!name.startsWith(COMMAND_PREFIX) || !isOrphan(name)) continue;
      await removeScratch(path.join(this.scratchDir, name));
      scratch.push(name);
    }
    return { scratch, groups };
  }
}

export class StagedShell extends ShellEnvironment {
  constructor(
    readonly workspace: StagedWorkspace,
    options: StagedShellOptions = {},
  ) {
    super(options);
  }

  async run(command: string | string[], o: ShellRunOptions): Promise<ShellResult> {
    const argv = toArgv(command);
    if (typeof o?.timeoutMs !== 'number' || !(o.timeoutMs > 0) || !Number.isFinite(o.timeoutMs))
      throw new ShellConfigError('timeoutMs is required: a positive number of milliseconds');
    const env = { PATH: SANDBOX_PATH, HOME: '/tmp', LANG: 'C.UTF-8', ...(o.env ?? {}) };
    for (const [k, v] of Object.entries(env))
      if (typeof v !== 'string' || k.includes('=') || k.includes('\0') || v.includes('\0') || k === '')
        throw new ShellConfigError(
          `environment entry ${JSON.stringify(k)} is not a NAME=string pair without NUL`,
        );
    const cwd = o.cwd ?? '.';
    const cwdStat = await this.workspace.stat(cwd);
    if (cwdStat.type !== 'dir')
      throw new WorkspaceFsError(cwd, 'ENOTDIR', 'is not a directory; cwd must be one');
    const cwdRel = path.posix.normalize(
      path.relative(this.workspace.root, path.resolve(this.workspace.root, cwd)) || '.',
    );
    if (this.isolation === 'bwrap') {
      const probe = probeBwrap(this.bwrap);
      if (!probe.ok) throw new ShellIsolationUnavailableError(probe.detail);
    }
    const tools = probeProcessTools();
    if (!tools.ok) throw new ShellIsolationUnavailableError(tools.detail);
    const network = o.network === true;

    const name = commandName();
    const scratch = path.join(this.scratchDir, name);
    await fs.mkdir(scratch, { mode: 0o700 });
    try {
      const plan = await this.plan();
      const arch = seccompArch();
      const seccompFile = this.seccomp && arch !== null ? path.join(scratch, 'seccomp.bpf') : null;
      if (seccompFile !== null) await fs.writeFile(seccompFile, buildSeccompFilter(arch!), { mode: 0o600 });
      const sandbox = (dir: string) => [
        this.bwrap,
        ...bwrapArgs({
          copyDir: dir,
          root: this.workspace.root,
          cwd: path.join(this.workspace.root, cwdRel),
          network,
          env,
          argv,
          seccomp: seccompFile !== null,
        }),
      ];
      const view: CommandView = this.useOverlay(scratch)
        ? await overlayView(this.workspace, scratch, sandbox)
        : await copyView(this.workspace, scratch, {
            sandbox: this.isolation === 'bwrap' ? sandbox : null,
            argv,
            env,
            cwd: cwdRel,
          });
      const started = performance.now();
      let out: Awaited<ReturnType<typeof runCommand>>;
      try {
        out = await runCommand({
          argv: view.argv,
          cwd: view.cwd,
          env: view.env,
          timeoutMs: o.timeoutMs,
          keepOutputBytes: this.maxOutput,
          plan,
          name,
          seccompFile,
          ...(o.signal ? { signal: o.signal } : {}),
        });
      } catch (err) {
        if (o.signal?.aborted) throw err;
        throw new ShellSpawnError(`${view.argv[0]}: ${(err as Error).message}`, err);
      }
      if (out.preludeFailed !== null) throw new ShellSpawnError(out.preludeFailed);
      const durationMs = performance.now() - started;
      const base = {
        argv,
        cwd: cwdRel,
        exitCode: out.exitCode,
        signal: out.signal,
        stdout: out.stdout,
        stderr: out.stderr,
        stdoutTruncated: out.stdoutTruncated,
        stderrTruncated: out.stderrTruncated,
        isolation: this.isolation,
        view: view.kind,
        network,
        enforcement: plan.enforcement,
        seccomp: seccompFile !== null,
        durationMs,
      };
      if (out.limit !== null) {
        this.record({ ...base, timedOut: false, changes: [], skipped: [] });
        const value = {
          cpu: this.limits.cpuSeconds,
          memory: this.limits.memoryBytes,
          processes: this.limits.processes,
          output: this.limits.outputBytes,
          fileSize: this.limits.fileBytes,
        }[out.limit];
        const mechanism = out.limit === 'output' ? 'the worker' : plan.enforcement[out.limit];
        throw new ShellLimitError(argv, out.limit, value, mechanism, out.stdout, out.stderr);
      }
      if (out.timedOut) {
        const result: ShellResult = { ...base, timedOut: true, changes: [], skipped: [] };
        this.record(result);
        if (o.onTimeout === 'return') return result;
        throw new ShellTimeoutError(argv, o.timeoutMs, out.stdout, out.stderr);
      }
      const { changes, skipped } = await view.changes(out.stderr);
      this.workspace.checkStagedBytes(changes, `shell command ${printableJson(argv)}`);
      try {
        await stage(this.workspace, view.contentDir, changes);
      } catch (err) {
        if (err instanceof StagedBytesLimitError) throw err;
        const p = (err as { path?: unknown }).path;
        throw new ShellChangesRefusedError(typeof p === 'string' ? p : '?', err);
      }
      const result: ShellResult = { ...base, timedOut: false, changes, skipped };
      this.record(result);
      return result;
    } finally {
      await removeScratch(scratch);
    }
  }

  private useOverlay(scratch: string): boolean {
    if (this.isolation !== 'bwrap' || this.view === 'copy') return false;
    const safe = overlaySafePath(scratch) && overlaySafePath(this.workspace.root);
    if (this.view === 'overlay') {
      if (!safe)
        throw new ShellConfigError(
          `view 'overlay' cannot mount paths containing ',', ':' or '\\' (${this.workspace.root}); use view 'copy'`,
        );
      if (!probeOverlay())
        throw new ShellIsolationUnavailableError(
          "view 'overlay' needs unprivileged overlayfs in a user namespace (unshare -Urm, Linux >= 5.11); use view 'copy' or 'auto'",
        );
      return true;
    }
    return safe && probeOverlay();
  }

  private record(r: ShellResult): void {
    const tape = currentActivityTape();
    if (tape === undefined) return;
    tape.effect('shell.exec', async (s) => ({
      argv: r.argv,
      cwd: r.cwd,
      exitCode: r.exitCode,
      signal: r.signal,
      timedOut: r.timedOut,
      stdout: await s.putValue(tape.redact(r.stdout), tape.step),
      stderr: await s.putValue(tape.redact(r.stderr), tape.step),
      changes: r.changes,
      skipped: r.skipped,
      isolation: r.isolation,
      view: r.view,
      network: r.network,
      enforcement: r.enforcement,
      seccomp: r.seccomp,
    }));
  }
}

function toArgv(command: string | string[]): string[] {
  const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
  if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== 'string'))
    throw new ShellConfigError('command must be a non-empty string or a non-empty array of strings');
  if (argv[0] === '' || argv.some((a) => a.includes('\0')))
    throw new ShellConfigError('command arguments may not be empty (the program) or contain NUL bytes');
  return argv;
}

async function removeScratch(scratch: string): Promise<void> {
  await fs.rm(scratch, { recursive: true, force: true }).catch(async () => {
    // A command may leave directories without write permission; make them removable and retry.
    await chmodTree(scratch);
    await fs.rm(scratch, { recursive: true, force: true });
  });
}

async function chmodTree(dir: string): Promise<void> {
  await fs.chmod(dir, 0o700).catch(() => {});
  for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => []))
    if (e.isDirectory()) await chmodTree(path.join(dir, e.name));
}
