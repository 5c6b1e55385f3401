/**
 * The escape suite, shell: a command that tries to exhaust the worker (2,000 processes, 2 GiB of memory, endless
 * CPU, endless output) or to reach the kernel the sandbox does not need (new namespaces, the keyring, io_uring,
 * terminal injection) through a run's booth (`booth.shell.run`). Each checks the real targets byte for byte after
 * the attempt and after the rollback, and that nothing of the command is left running. A worker's start-up
 * sweeps what commands of dead workers left. (A real worker SIGKILLed mid-command: shellDiesWithWorker.test.ts.)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BoothRuntime, type ShadowBooth, type ShadowBoothConfig } from '../../../src/booth/shadowBooth';
import { ShellLimitError, type ShellResult, type StagedShellOptions } from '../../../src/booth/shell';
import { makeGroups, probeCgroups, sweepGroups } from '../../../src/booth/shell/cgroups';
import { commandName, isOrphan } from '../../../src/booth/shell/owner';
import {
  cgroupsNamed,
  describeProcess,
  processesMentioning,
  uniqueSleep,
  within,
} from '../../support/processes';
import { fingerprint, makeWorld, type World } from './targets';

let world: World;
let runtime: BoothRuntime;
let runs = 0;

function start(shell: StagedShellOptions = {}, config: Partial<ShadowBoothConfig> = {}): void {
  runtime = new BoothRuntime({
    workspaceRoot: world.workspace,
    stagingRoot: world.staging,
    shell: { scratchDir: path.join(world.base, 'scratch'), ...shell },
    ...config,
  });
  fs.mkdirSync(path.join(world.base, 'scratch'), { recursive: true });
}

beforeEach(() => {
  world = makeWorld();
  start();
});
afterEach(async () => {
  await runtime.close();
  world.cleanup();
});

const targets = () => fingerprint([world.workspace, world.outside]);

/**
 * A word no other process on the machine has in its command line: a test's command carries it (as an argument or
 * a trailing comment) to prove no process of it is left. A short number is not enough: processes of other suites
 * running meanwhile carry paths, ports and timestamps in their arguments.
 */
const marker = (test: string) =>
  `jbx-escape-${test}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * Runs `command` in a fresh run's booth: returns what it threw (or its result), after checking the real targets
 * are unchanged after the attempt and after the rollback, and that no process carrying `marker` outlives it.
 */
async function attempt(command: string, marker: string, timeoutMs = 120_000): Promise<unknown> {
  const before = targets();
  const booth: ShadowBooth = await runtime.open('wf', `run${++runs}`);
  const out = await booth.shell.run(command, { timeoutMs }).catch((e: unknown) => e);
  const left = processesMentioning(marker);
  expect(left, left.map(describeProcess).join('\n')).toEqual([]);
  expect(targets()).toEqual(before);
  await booth.discard();
  expect(targets()).toEqual(before);
  expect(fs.readdirSync(path.join(world.base, 'scratch'))).toEqual([]);
  return out;
}

describe('limits stop a command that tries to exhaust the worker', () => {
  it('2,000 processes: stopped at the process limit (256), every one of them killed', async () => {
    const { shell } = await runtime.start();
    expect(shell.limits.processes).toBe(256);
    const sleep = `sleep ${uniqueSleep()}`;
    const err = await attempt(
      `for i in $(seq 2000); do ${sleep} & done; wait; echo survived > survived.txt`,
      sleep,
    );
    expect(err).toBeInstanceOf(ShellLimitError);
    expect(err).toMatchObject({ limit: 'processes', value: 256, mechanism: shell.enforcement.processes });
    expect(['cgroup2', 'cgroup1']).toContain(shell.enforcement.processes);
  });

  it('2 GiB of memory: stopped at the memory limit (1 GiB)', async () => {
    const { shell } = await runtime.start();
    expect(shell.limits.memoryBytes).toBe(1024 ** 3);
    const m = marker('memory');
    const err = await attempt(`perl -e '$x = "a" x (2 * 1024 ** 3); print length($x); sleep 30' # ${m}`, m);
    expect(err).toBeInstanceOf(ShellLimitError);
    expect(err).toMatchObject({ limit: 'memory', value: 1024 ** 3, mechanism: shell.enforcement.memory });
    expect(['cgroup2', 'cgroup1']).toContain(shell.enforcement.memory);
  });

  it('endless CPU: stopped at the CPU time limit, summed over its processes', async () => {
    await runtime.close();
    start({ limits: { cpuSeconds: 1 } });
    const { shell } = await runtime.start();
    const started = Date.now();
    // Two busy processes: a per-process limit would let them use twice the time.
    const m = marker('cpu');
    const err = await attempt(`(while :; do :; done) & while :; do :; done # ${m}`, m, 60_000);
    expect(err).toBeInstanceOf(ShellLimitError);
    expect(err).toMatchObject({ limit: 'cpu', value: 1, mechanism: shell.enforcement.cpu });
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('endless output: stopped at the output limit (16 MiB)', async () => {
    const m = marker('output');
    const err = await attempt(`yes ${m}`, `yes ${m}`);
    expect(err).toBeInstanceOf(ShellLimitError);
    expect(err).toMatchObject({ limit: 'output', value: 16 * 1024 * 1024, mechanism: 'the worker' });
    expect((err as ShellLimitError).stdout.length).toBe(1024 * 1024);
  });

  it('without control groups: rlimits, said so, and the CPU limit still holds', async () => {
    await runtime.close();
    start({ useCgroups: false, limits: { cpuSeconds: 1 } });
    const { shell } = await runtime.start();
    expect(shell.enforcement).toMatchObject({ cpu: 'rlimit', memory: 'rlimit', kill: 'process-tree' });
    expect(shell.enforcement.processes).toBe(process.getuid!() === 0 ? 'none' : 'rlimit');
    expect(shell.enforcement.notes.join('\n')).toContain('RLIMIT_CPU');
    const m = marker('rlimit-cpu');
    const err = await attempt(`while :; do :; done # ${m}`, m, 60_000);
    expect(err).toMatchObject({ limit: 'cpu', mechanism: 'rlimit' });
    // RLIMIT_AS: the allocation fails inside the command, which the booth returns as the command's own failure.
    const m2 = marker('rlimit-memory');
    const r = (await attempt(
      `perl -e '$x = "a" x (2 * 1024 ** 3); print "allocated"; sleep 30' # ${m2}`,
      m2,
      60_000,
    )) as ShellResult;
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.enforcement.memory).toBe('rlimit');
  });
});

describe('the seccomp filter refuses what a command never needs', () => {
  /** Each call prints `name errno`; 0 when it did not fail. */
  const PROBE = [
    'sub try { my ($n, $r) = @_; print "$n ", ($r == -1 ? $!+0 : 0), "\\n" }',
    'try("keyctl", syscall(250, 0, -3));',
    'try("io_uring_setup", syscall(425, 1, 0));',
    'try("unshare", syscall(272, 0x10000000));',
    'try("clone-newuser", syscall(56, 0x10000000 | 17, 0, 0, 0, 0));',
    'try("tiocsti", syscall(16, 0, 0x5412, 0));',
    'try("getpid", syscall(39));',
  ].join(' ');

  async function probe(): Promise<Record<string, number>> {
    const before = targets();
    const booth = await runtime.open('wf', `run${++runs}`);
    const r = await booth.shell.run(['perl', '-e', PROBE], { timeoutMs: 60_000 });
    expect(targets()).toEqual(before);
    await booth.discard();
    expect(targets()).toEqual(before);
    expect(r.exitCode, r.stderr).toBe(0);
    return Object.fromEntries(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .map(([k, v]) => [k!, Number(v)]),
    );
  }

  it.skipIf(process.arch !== 'x64')('on x86_64: EPERM under the filter, not without it', async () => {
    const { shell } = await runtime.start();
    expect(shell.seccomp).toMatchObject({ active: true, arch: 'x86_64' });
    const EPERM = 1;
    const filtered = await probe();
    expect(filtered).toEqual({
      keyctl: EPERM,
      io_uring_setup: EPERM,
      unshare: EPERM,
      'clone-newuser': EPERM,
      tiocsti: EPERM,
      getpid: 0,
    });
    await runtime.close();
    start({ seccomp: false });
    expect((await runtime.start()).shell.seccomp.active).toBe(false);
    const open = await probe();
    // The same calls reach the kernel without the filter: it, not the sandbox, refused them.
    for (const name of ['keyctl', 'io_uring_setup', 'unshare', 'tiocsti']) expect(open[name]).not.toBe(EPERM);
  });

  it('threads and child processes still work under it (clone3 falls back to clone)', async () => {
    const booth = await runtime.open('wf', `run${++runs}`);
    const r = await booth.shell.run(
      `${process.execPath} -e "new (require('worker_threads').Worker)('console.log(1+1)',{eval:true}); require('child_process').exec('echo child',(e,o)=>console.log(o.trim()))"`,
      { timeoutMs: 60_000 },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.split('\n').sort()).toEqual(['', '2', 'child']);
    expect(r.seccomp).toBe(true);
  });
});

describe("a worker's start-up sweeps what commands of dead workers left", () => {
  /** A command name of a worker that is gone: this boot, a pid that exists no more. */
  const deadName = () =>
    commandName().replace(/^jbx-shell-([0-9a-f]{8})-\d+-\d+-/, 'jbx-shell-$1-4194300-1-');

  /**
   * A control group named `name` holding `sleep <marker>` (own session, no parent-death signal), once the sleep
   * is both exec'd and listed in the group (the shell before it names the marker too, outside the group until
   * its echo). A dead owner's group may be swept by a worker starting elsewhere before the shell joins it: then
   * the shell finds no group and exits, and the group is made again.
   */
  async function groupWithProcess(name: string, marker: string) {
    for (let tries = 0; tries < 5; tries++) {
      const groups = (await makeGroups(await probeCgroups(), name, {
        memoryBytes: 1024 ** 3,
        processes: 16,
      }))!;
      const child = spawn('/bin/sh', ['-c', `echo $$ > ${groups.procs[0]} && exec sleep ${marker}`], {
        stdio: 'ignore',
        detached: true,
      });
      child.unref();
      let gone = false;
      child.once('exit', () => {
        gone = true;
      });
      const joined = () => {
        try {
          return (
            fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8') === `sleep\0${marker}\0` &&
            fs.readFileSync(groups.procs[0]!, 'utf8').split('\n').includes(String(child.pid))
          );
        } catch {
          return false;
        }
      };
      await within(30_000, () => joined() || gone);
      if (joined()) return;
      child.kill('SIGKILL');
    }
    throw new Error(`no process could be put in a control group named ${name}`);
  }

  it("removes dead owners' scratch folders (unwritable ones too), not a live owner's", async () => {
    const scratch = path.join(world.base, 'scratch');
    const own = commandName();
    const dead = deadName();
    for (const name of [own, dead]) fs.mkdirSync(path.join(scratch, name, 'upper/work'), { recursive: true });
    fs.chmodSync(path.join(scratch, dead, 'upper/work'), 0);
    const { swept } = await runtime.start();
    expect(swept.scratch).toEqual([dead]);
    expect(fs.readdirSync(scratch)).toEqual([own]);
  });

  it("kills the processes still in a dead owner's control groups and removes the groups", async () => {
    const dead = deadName();
    const sleep = uniqueSleep();
    await groupWithProcess(dead, sleep);
    const { swept } = await runtime.start();
    // Any worker starting on this machine meanwhile sweeps dead owners' groups too: this one, or another, did.
    expect(processesMentioning(`sleep ${sleep}`)).toEqual([]);
    expect(cgroupsNamed(dead)).toEqual([]);
    // And it swept only groups of owners that are gone.
    expect(swept.groups.filter((name) => !isOrphan(name))).toEqual([]);
  });

  it('the group sweep kills what a group holds and removes it (a name no other worker would sweep)', async () => {
    // This process's own name: its owner is alive, so no other worker's sweep touches it.
    const own = commandName();
    const sleep = uniqueSleep();
    await groupWithProcess(own, sleep);
    expect(cgroupsNamed(own).length).toBeGreaterThan(0);
    expect(await sweepGroups(await probeCgroups(), (name) => name === own)).toEqual([own]);
    expect(processesMentioning(`sleep ${sleep}`)).toEqual([]);
    expect(cgroupsNamed(own)).toEqual([]);
  });
});
