/**
 * The shell part of the Shadow Booth: a command runs against a copy of the workspace's merged view, inside
 * bubblewrap, and whatever it leaves there becomes staged changes of the StagedWorkspace. The real workspace is
 * read-only inside the sandbox and is never written. See docs/shadow-booth.md for what isolation applies.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { printableJson } from '../../errors';
import { currentActivityTape } from '../../recorder/activityTape';
import { StagedBytesLimitError, WorkspaceFsError } from '../errors';
import type { StagedWorkspace } from '../stagedWorkspace';
import {
  ShellChangesRefusedError,
  ShellConfigError,
  ShellIsolationUnavailableError,
  ShellSpawnError,
  ShellTimeoutError,
} from './errors';
import { bwrapArgs, type Isolation, probeBwrap, SANDBOX_PATH } from './isolation';
import { buildLayer, OVERLAY_SCRIPT, overlaySafePath, probeOverlay, scanUpper } from './overlay';
import { materialize, type ShellChange, type Skipped, scan, stage } from './view';

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
}

export interface ShellResult {
  argv: string[];
  cwd: string;
  /** null when the command was killed by a signal. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  /** What the command changed, now staged in the workspace (empty after a timeout). */
  changes: ShellChange[];
  /** Entries the command created that the booth cannot stage (symlinks, FIFOs); they are dropped. */
  skipped: Skipped[];
  isolation: Isolation;
  /** How the workspace was shown to the command. */
  view: 'overlay' | 'copy';
  network: boolean;
  durationMs: number;
}

export class StagedShell {
  private readonly isolation: Isolation;
  private readonly scratchDir: string;
  private readonly maxOutput: number;
  private readonly bwrap: string;
  private readonly view: 'auto' | 'overlay' | 'copy';

  constructor(
    readonly workspace: StagedWorkspace,
    options: StagedShellOptions = {},
  ) {
    this.isolation = options.isolation ?? 'bwrap';
    if (this.isolation !== 'bwrap' && this.isolation !== 'none')
      throw new ShellConfigError(`isolation ${String(this.isolation)} is not one of 'bwrap', 'none'`);
    this.scratchDir = options.scratchDir ?? os.tmpdir();
    this.maxOutput = options.maxOutputBytes ?? 1024 * 1024;
    this.bwrap = options.bwrapPath ?? 'bwrap';
    this.view = options.view ?? 'auto';
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
    const network = o.network === true;

    const scratch = await fs.mkdtemp(path.join(this.scratchDir, 'jbx-shell-'));
    try {
      const overlay = this.useOverlay(scratch);
      const contentDir = path.join(scratch, overlay ? 'upper' : 'root');
      const mountAt = path.join(scratch, overlay ? 'merged' : 'root');
      const listing = path.join(scratch, 'listing');
      let view: Awaited<ReturnType<typeof materialize>> | null = null;
      let spawnArgv: string[];
      let spawnEnv: Record<string, string> = env;
      let spawnCwd: string;
      const sandbox = () =>
        bwrapArgs({
          copyDir: mountAt,
          root: this.workspace.root,
          cwd: path.join(this.workspace.root, cwdRel),
          network,
          env,
          argv,
        });
      if (overlay) {
        for (const d of ['layer', 'upper', 'work', 'merged']) await fs.mkdir(path.join(scratch, d));
        const whiteouts = await buildLayer(this.workspace, path.join(scratch, 'layer'));
        spawnArgv = [
          'unshare',
          '-Urm',
          '--propagation',
          'private',
          'sh',
          '-c',
          OVERLAY_SCRIPT,
          'sh',
          String(whiteouts.length),
          ...whiteouts,
          this.bwrap,
          ...sandbox(),
        ];
        spawnEnv = {
          PATH: SANDBOX_PATH,
          JBX_LOWER: `${path.join(scratch, 'layer')}:${this.workspace.root}`,
          JBX_UPPER: contentDir,
          JBX_WORK: path.join(scratch, 'work'),
          JBX_MERGED: mountAt,
          JBX_OUT: listing,
        };
        spawnCwd = scratch;
      } else {
        await fs.mkdir(mountAt);
        view = await materialize(this.workspace, mountAt);
        await fs.chmod(mountAt, (await this.workspace.stat('.')).mode);
        spawnArgv = this.isolation === 'bwrap' ? [this.bwrap, ...sandbox()] : argv;
        spawnCwd = this.isolation === 'bwrap' ? scratch : path.join(mountAt, cwdRel);
      }
      const started = performance.now();
      const out = await this.spawnAndWait(spawnArgv, {
        cwd: spawnCwd,
        env: spawnEnv,
        timeoutMs: o.timeoutMs,
      });
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
        view: overlay ? ('overlay' as const) : ('copy' as const),
        network,
        durationMs,
      };
      if (out.timedOut) {
        const result: ShellResult = { ...base, timedOut: true, changes: [], skipped: [] };
        this.record(result);
        if (o.onTimeout === 'return') return result;
        throw new ShellTimeoutError(argv, o.timeoutMs, out.stdout, out.stderr);
      }
      let scanned: Awaited<ReturnType<typeof scan>>;
      if (overlay) {
        if ((await fs.stat(`${listing}.mounted`).catch(() => null)) === null)
          throw new ShellSpawnError(`the overlay view could not be mounted: ${out.stderr.trim()}`);
        const list = await fs.readFile(listing).catch(() => null);
        if (list === null)
          throw new ShellSpawnError(`the overlay view could not be scanned: ${out.stderr.trim()}`);
        scanned = await scanUpper(this.workspace, contentDir, list);
      } else scanned = await scan(view!);
      const { changes, skipped } = scanned;
      this.workspace.checkStagedBytes(changes, `shell command ${printableJson(argv)}`);
      try {
        await stage(this.workspace, contentDir, changes);
      } catch (err) {
        if (err instanceof StagedBytesLimitError) throw err;
        const p = (err as { path?: unknown }).path;
        throw new ShellChangesRefusedError(typeof p === 'string' ? p : '?', err);
      }
      const result: ShellResult = { ...base, timedOut: false, changes, skipped };
      this.record(result);
      return result;
    } finally {
      await fs.rm(scratch, { recursive: true, force: true }).catch(async () => {
        // A command may leave directories without write permission; make them removable and retry.
        await chmodTree(scratch);
        await fs.rm(scratch, { recursive: true, force: true });
      });
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
    }));
  }

  private spawnAndWait(
    argv: string[],
    o: { cwd: string; env: Record<string, string>; timeoutMs: number },
  ): Promise<{
    exitCode: number | null;
    signal: string | null;
    stdout: string;
    stderr: string;
    stdoutTruncated: boolean;
    stderrTruncated: boolean;
    timedOut: boolean;
  }> {
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: o.cwd,
        env: o.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, so a timeout kills the command and everything it started.
        detached: true,
      });
      const collect = () => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        return {
          add: (d: Buffer) => {
            const room = this.maxOutput - size;
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
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }, o.timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(new ShellSpawnError(`${argv[0]}: ${err.message}`, err));
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        resolve({
          exitCode: code,
          signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated(),
          stderrTruncated: stderr.truncated(),
          timedOut,
        });
      });
    });
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

async function chmodTree(dir: string): Promise<void> {
  await fs.chmod(dir, 0o700).catch(() => {});
  for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => []))
    if (e.isDirectory()) await chmodTree(path.join(dir, e.name));
}
