/**
 * The reaper (src/booth/shell/reaper.ts) on its own: the processes of a command's control groups die within a
 * second of their worker's SIGKILL although nothing else would end them (they have a session of their own, no
 * parent-death signal, no PID namespace) and four busy loops among them keep both cores busy; the groups are
 * removed and the reaper exits. While its worker lives it kills nothing, and a reaper that died is replaced.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ShellEnvironment, StagedShell } from '../../src/booth/shell';
import { makeGroups, probeCgroups } from '../../src/booth/shell/cgroups';
import { commandName } from '../../src/booth/shell/owner';
import { ensureReaper, REAPER_NAME, reaperPid } from '../../src/booth/shell/reaper';
import { StagedWorkspace } from '../../src/booth/stagedWorkspace';
import {
  cgroupsNamed,
  exitTimes,
  hasExited,
  processesMentioning,
  uniqueSleep,
  within,
} from '../support/processes';

const CHILD = path.join(__dirname, 'reaperChild.ts');
const children: ChildProcess[] = [];
const markers: string[] = [];

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const m of markers.splice(0)) for (const pid of processesMentioning(m)) process.kill(pid, 'SIGKILL');
});

describe("a dead worker's reaper", () => {
  it('kills every process of its commands within a second of the SIGKILL, removes their groups and exits', async () => {
    const marker = uniqueSleep();
    markers.push(marker);
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, marker], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
    });
    expect(await within(60_000, () => out.includes('\n'))).toBe(true);
    const [, name, reaper] = out.trim().split(' ');
    expect(name).toMatch(/^jbx-shell-/);
    expect(Number(reaper)).toBeGreaterThan(0);
    // The sleep and the four loops (the worker's own command line names the marker too).
    const ofCommand = () => processesMentioning(marker).filter((pid) => pid !== child.pid);
    expect(await within(10_000, () => ofCommand().length === 5)).toBe(true);
    const pids = ofCommand();
    expect(cgroupsNamed(name!).length).toBeGreaterThan(0);

    const killed = performance.now();
    child.kill('SIGKILL');
    const [, times] = await Promise.all([exited, exitTimes([...pids, Number(reaper)], killed, 10_000)]);
    const late = [...times].filter(([pid, t]) => pid !== Number(reaper) && (t === null || t > 1_000));
    expect(late, `exit times after the SIGKILL (ms): ${JSON.stringify([...times])}`).toEqual([]);
    expect(processesMentioning(marker)).toEqual([]);
    // The reaper removes the groups, then exits.
    expect(times.get(Number(reaper))).not.toBeNull();
    expect(cgroupsNamed(name!)).toEqual([]);
  });
});

describe("a live worker's reaper", () => {
  it("kills nothing while its worker lives: its worker's command keeps running", async () => {
    const layout = await probeCgroups();
    const name = commandName();
    const groups = (await makeGroups(layout, name, { memoryBytes: 1024 ** 3, processes: 16 }))!;
    ensureReaper(layout);
    const marker = uniqueSleep();
    markers.push(marker);
    const cmd = spawn(
      '/bin/sh',
      ['-c', `for f in "$@"; do echo $$ > "$f"; done; exec sleep ${marker}`, 'sh', ...groups.procs],
      {
        stdio: 'ignore',
      },
    );
    children.push(cmd);
    expect(await within(5_000, () => processesMentioning(marker).length === 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(processesMentioning(marker)).toHaveLength(1);
    expect(reaperPid()).not.toBeNull();
    await groups.remove();
    expect(processesMentioning(marker)).toEqual([]);
  });

  it('is started again before the next command when it died', async () => {
    const layout = await probeCgroups();
    ensureReaper(layout);
    const first = reaperPid()!;
    expect(fs.readFileSync(`/proc/${first}/cmdline`, 'utf8').split('\0')).toContain(REAPER_NAME);
    process.kill(first, 'SIGKILL');
    expect(await within(5_000, () => reaperPid() === null)).toBe(true);
    const base = fs.realpathSync(fs.mkdtempSync('/var/tmp/jbx-reaper-'));
    try {
      fs.mkdirSync(path.join(base, 'ws'));
      const shell = new StagedShell(
        await StagedWorkspace.open({ root: path.join(base, 'ws'), stagingDir: path.join(base, 'staging') }),
        { scratchDir: base },
      );
      const r = await shell.run('echo hi', { timeoutMs: 60_000 });
      expect(r.stdout).toBe('hi\n');
      const second = reaperPid();
      expect(second).not.toBeNull();
      expect(second).not.toBe(first);
      expect(hasExited(second!)).toBe(false);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('is not needed without control groups, and the status says what ends a command then', async () => {
    const base = fs.realpathSync(fs.mkdtempSync('/var/tmp/jbx-reaper-'));
    try {
      expect((await new ShellEnvironment({ useCgroups: false }).status()).onWorkerDeath).toEqual({
        reaper: false,
        detail: 'the parent-death chain alone ends it link by link (no control groups for commands here)',
      });
      const withGroups = (await new ShellEnvironment({ scratchDir: base }).status()).onWorkerDeath;
      expect(withGroups.reaper).toBe(true);
      expect(withGroups.detail).toMatch(/^the reaper kills every process in the command's groups at once/);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });
});
