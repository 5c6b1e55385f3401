import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StagedWorkspace } from '../../src/booth';
import {
  ShellChangesRefusedError,
  ShellConfigError,
  ShellIsolationUnavailableError,
  ShellTimeoutError,
  StagedShell,
} from '../../src/booth/shell';
import { ActivityTape, Redactor, TapeStore } from '../../src/recorder';
import { runWithActivityTape } from '../../src/recorder/activityTape';
import { decodeBlob, readTape } from '../../src/recorder/tape';
import { waitUntil } from '../support/history';
import { processesWith, uniqueSleep } from '../support/processes';
import { type Fixture, makeFixture, snapshot } from './helpers';

let fx: Fixture;
let ws: StagedWorkspace;
let shell: StagedShell;
let realBefore: Record<string, string>;
let outsideBefore: Record<string, string>;

const untouched = () => {
  expect(snapshot(fx.root)).toEqual(realBefore);
  expect(snapshot(fx.outside)).toEqual(outsideBefore);
};

describe.each(['overlay', 'copy'] as const)('StagedShell with the %s view', (view) => {
  beforeEach(async () => {
    fx = makeFixture();
    ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    shell = new StagedShell(ws, { view });
    realBefore = snapshot(fx.root);
    outsideBefore = snapshot(fx.outside);
  });
  afterEach(() => fx.cleanup());

  it('captures stdout, stderr and the exit code, in the requested cwd, with only the given environment', async () => {
    process.env.JBX_TEST_WORKER_SECRET = 'do-not-leak';
    try {
      const r = await shell.run(
        'pwd; printf "out"; printf "err" >&2; echo "[$GREETING][$JBX_TEST_WORKER_SECRET]"; exit 7',
        {
          timeoutMs: 10_000,
          cwd: 'dir',
          env: { GREETING: 'hello' },
        },
      );
      expect(r.exitCode).toBe(7);
      expect(r.timedOut).toBe(false);
      expect(r.stdout).toBe(`${path.join(fx.root, 'dir')}\nout[hello][]\n`);
      expect(r.stderr).toBe('err');
      expect(r.isolation).toBe('bwrap');
      expect(r.view).toBe(view);
      const argv = await shell.run(['/bin/echo', 'a b', '$HOME'], { timeoutMs: 10_000 });
      expect(argv.stdout).toBe('a b $HOME\n');
    } finally {
      delete process.env.JBX_TEST_WORKER_SECRET;
    }
    untouched();
  });

  it('stages what the command writes, deletes and chmods; the real directory is untouched until commit', async () => {
    await ws.writeFile('staged.txt', 'from the file API\n');
    const r = await shell.run(
      [
        'cat staged.txt',
        'echo new > new.txt',
        'echo more >> a.txt',
        `echo abs > ${fx.root}/abs.txt`,
        'rm -r dir/sub',
        'mkdir -p made/deep && echo d > made/deep/f',
        'chmod 700 exec.sh',
      ].join(' && '),
      { timeoutMs: 10_000 },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('from the file API\n');
    expect(r.changes.map((c) => `${c.op} ${c.path}`).sort()).toEqual(
      [
        'write a.txt',
        'write abs.txt',
        'delete dir/sub',
        'chmod exec.sh',
        'mkdir made',
        'mkdir made/deep',
        'write made/deep/f',
        'write new.txt',
      ].sort(),
    );
    untouched();
    expect(await ws.readFile('a.txt', 'utf8')).toBe('alpha\nmore\n');
    expect(await ws.exists('dir/sub')).toBe(false);
    expect((await ws.stat('exec.sh')).mode).toBe(0o700);
    // The next command sees the previous one's staged state.
    const next = await shell.run('cat new.txt; ls dir', { timeoutMs: 10_000 });
    expect(next.stdout).toBe('new\nb.txt\n');
    expect(next.changes).toEqual([]);
    await ws.commit();
    expect(fs.readFileSync(path.join(fx.root, 'made/deep/f'), 'utf8')).toBe('d\n');
    expect(fs.existsSync(path.join(fx.root, 'dir/sub'))).toBe(false);
    expect(snapshot(fx.outside)).toEqual(outsideBefore);
  });

  it('finds deletions of names a shell glob or a line break could hide: dotfiles, `..x`, `*`, spaces, newlines, in nested directories', async () => {
    const names = ['.hidden', '..dots', 'star*', 'sp ace', 'new\nline', '[x]'];
    fs.mkdirSync(path.join(fx.root, 'deep/er'), { recursive: true });
    fs.mkdirSync(path.join(fx.root, 'deep/.hid'));
    for (const n of names) {
      fs.writeFileSync(path.join(fx.root, 'deep/er', n), n);
      fs.writeFileSync(path.join(fx.root, n), n);
    }
    fs.writeFileSync(path.join(fx.root, 'deep/er/keep'), 'k');
    fs.writeFileSync(path.join(fx.root, 'deep/.hid/keep'), 'k');
    realBefore = snapshot(fx.root);
    const r = await shell.run(
      [
        "rm -- .hidden ..dots 'star*' 'new",
        "line' deep/er/.hidden deep/er/..dots 'deep/er/sp ace' 'deep/er/[x]'",
        'echo w > deep/er/keep && echo h > deep/.hid/keep',
      ].join('\n'),
      { timeoutMs: 10_000 },
    );
    expect(r.exitCode).toBe(0);
    expect(r.changes.map((c) => `${c.op} ${c.path}`).sort()).toEqual(
      [
        'delete .hidden',
        'delete ..dots',
        'delete star*',
        'delete new\nline',
        'delete deep/er/.hidden',
        'delete deep/er/..dots',
        'delete deep/er/sp ace',
        'delete deep/er/[x]',
        'write deep/er/keep',
        'write deep/.hid/keep',
      ].sort(),
    );
    expect((await ws.readdir('.')).filter((n) => names.includes(n)).sort()).toEqual(['[x]', 'sp ace']);
    expect((await ws.readdir('deep/er')).sort()).toEqual(['keep', 'new\nline', 'star*']);
    untouched();
  });

  it('shows staged deletions, recreated directories and staged-only files exactly as the file API does', async () => {
    await ws.rm('dir', { recursive: true });
    await ws.mkdir('dir');
    await ws.writeFile('dir/fresh.txt', 'fresh\n');
    await ws.rm('a.txt');
    await ws.writeFile('only-staged.txt', 'x');
    await ws.chmod('exec.sh', 0o600);
    const r = await shell.run(
      'ls -A; echo --; ls -A dir; stat -c %a exec.sh; rm only-staged.txt dir/fresh.txt',
      {
        timeoutMs: 10_000,
      },
    );
    expect(r.stdout).toBe('dir\nempty\nexec.sh\nonly-staged.txt\n--\nfresh.txt\n600\n');
    expect(r.changes.map((c) => `${c.op} ${c.path}`).sort()).toEqual([
      'delete dir/fresh.txt',
      'delete only-staged.txt',
    ]);
    expect(await ws.readdir('.')).toEqual(['dir', 'empty', 'exec.sh']);
    expect(await ws.readdir('dir')).toEqual([]);
    untouched();
  });

  it('cannot write outside the workspace: the rest of the host is read-only', async () => {
    const r = await shell.run(
      `echo x > ${fx.outside}/secret.txt; echo y > ${fx.base}/new.txt; echo z > /etc/jbx; true`,
      {
        timeoutMs: 10_000,
      },
    );
    expect(r.stderr).toMatch(/Read-only file system/);
    expect(r.changes).toEqual([]);
    untouched();
    expect(fs.existsSync(path.join(fx.base, 'new.txt'))).toBe(false);
  });

  it('kills a command at its timeout and stages nothing it wrote', async () => {
    const t0 = performance.now();
    const err = await shell
      .run('echo partial > p.txt; echo started; sleep 30', { timeoutMs: 400 })
      .catch((e) => e);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(err).toBeInstanceOf(ShellTimeoutError);
    expect(err.code).toBe('SHELL_TIMEOUT');
    expect(err.stdout).toBe('started\n');
    expect(await ws.exists('p.txt')).toBe(false);
    const r = await shell.run('sleep 30', { timeoutMs: 200, onTimeout: 'return' });
    expect(r).toMatchObject({ timedOut: true, exitCode: null, changes: [] });
    untouched();
  });

  it('kills a command and everything it started when its signal fires, and stages nothing it wrote', async () => {
    const marker = uniqueSleep();
    const stop = new AbortController();
    const running = shell
      .run(`echo partial > p.txt; echo started; sleep ${marker} & sleep ${marker}; wait`, {
        timeoutMs: 60_000,
        signal: stop.signal,
      })
      .catch((e) => e);
    await waitUntil('both sleeps run', () => processesWith(marker).length === 2);
    const reason = new Error('the run was cancelled');
    stop.abort(reason);
    expect(await running).toBe(reason);
    await waitUntil('no sleep is left', () => processesWith(marker).length === 0, 20_000);
    expect(await ws.exists('p.txt')).toBe(false);
    // A signal that fired already: the command never starts.
    await expect(shell.run(`sleep ${marker}`, { timeoutMs: 60_000, signal: stop.signal })).rejects.toBe(
      reason,
    );
    expect(processesWith(marker)).toEqual([]);
    untouched();
  });

  it('has no network unless asked for it', async () => {
    const server = net.createServer((s) => s.end('pong'));
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    const port = (server.address() as net.AddressInfo).port;
    const hostIp = Object.values((await import('node:os')).networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    const probe = (host: string) =>
      `node -e "const s=require('net').connect(${port},'${host}');s.on('data',d=>{console.log(String(d));process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})"`;
    try {
      const off = await shell.run(probe('127.0.0.1'), { timeoutMs: 20_000 });
      expect(off.stdout.trim()).toBe('ECONNREFUSED');
      if (hostIp !== undefined) {
        const offHost = await shell.run(probe(hostIp), { timeoutMs: 20_000 });
        expect(offHost.stdout.trim()).toMatch(/ENETUNREACH|EHOSTUNREACH|ECONNREFUSED/);
      }
      const on = await shell.run(probe('127.0.0.1'), { timeoutMs: 20_000, network: true });
      expect(on.stdout.trim()).toBe('pong');
    } finally {
      server.close();
    }
  });

  it('stages nothing when the booth refuses one of the writes, and drops symlinks and FIFOs', async () => {
    fs.linkSync(path.join(fx.outside, 'secret.txt'), path.join(fx.root, 'hard'));
    realBefore = snapshot(fx.root);
    outsideBefore = snapshot(fx.outside);
    const err = await shell
      .run('echo ok > fine.txt; echo pwned > hard', { timeoutMs: 10_000 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ShellChangesRefusedError);
    expect(err.path).toBe('hard');
    expect(await ws.exists('fine.txt')).toBe(false);
    const r = await shell.run(`ln -s ${fx.outside}/secret.txt link && mkfifo pipe && echo ok > fine.txt`, {
      timeoutMs: 10_000,
    });
    expect(r.skipped.map((s) => `${s.reason} ${s.path}`).sort()).toEqual([
      'special-file pipe',
      'symlink link',
    ]);
    expect(await ws.exists('fine.txt')).toBe(true);
    expect(await ws.readdir('.')).not.toContain('link');
    untouched();
  });

  it('keeps the staged changes of a command across a restart', async () => {
    await shell.run('echo persisted > kept.txt', { timeoutMs: 10_000 });
    const reopened = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
    expect(await reopened.readFile('kept.txt', 'utf8')).toBe('persisted\n');
    const again = await new StagedShell(reopened, { view }).run('cat kept.txt', { timeoutMs: 10_000 });
    expect(again.stdout).toBe('persisted\n');
    untouched();
  });

  it('records a shell.exec frame with stdout and stderr as blobs', async () => {
    const store = new TapeStore({ dir: path.join(fx.base, 'tapes'), fsync: 'none' });
    const run = {
      workflowId: 'wf',
      runId: 'r1',
      workflowType: 'shellTest',
      taskQueue: 'q',
      agentCodeHash: 'h',
    };
    const tape = new ActivityTape(
      { store, redactor: new Redactor({ env: {} }), costOf: () => null, nowUs: () => Date.now() * 1000 },
      run,
      { workflowId: 'wf', runId: 'r1', activityId: '1', attempt: 1 },
      'toolStep',
      1,
    );
    await runWithActivityTape(tape, () =>
      shell.run('echo hi; echo oops >&2; echo f > f.txt', { timeoutMs: 10_000 }),
    );
    await tape.flush('test');
    await store.close();
    const t = readTape(fs.readFileSync(store.pathFor('wf', 'r1')));
    const frame = t.frames.find((f) => f.kind === 'shell.exec')!;
    const p = frame.payload as Record<string, unknown>;
    expect(p.argv).toEqual(['/bin/sh', '-c', 'echo hi; echo oops >&2; echo f > f.txt']);
    expect(p).toMatchObject({ cwd: '.', exitCode: 0, timedOut: false });
    expect((p.changes as { path: string }[]).map((c) => c.path)).toEqual(['f.txt']);
    const blob = (ref: unknown) => decodeBlob(t.blobs.get((ref as { hash: string }).hash)!);
    expect(frame.refs).toHaveLength(2);
    expect(blob(p.stdout)).toBe('hi\n');
    expect(blob(p.stderr)).toBe('oops\n');
  });

  it('refuses bad options and a missing sandbox with typed errors, and runs unconfined only when opted in', async () => {
    await expect(shell.run([], { timeoutMs: 1000 })).rejects.toBeInstanceOf(ShellConfigError);
    await expect(shell.run('true', { timeoutMs: 0 })).rejects.toBeInstanceOf(ShellConfigError);
    await expect(shell.run(['echo', 'a\0b'], { timeoutMs: 1000 })).rejects.toBeInstanceOf(ShellConfigError);
    await expect(shell.run('true', { timeoutMs: 1000, cwd: '../outside' })).rejects.toMatchObject({
      code: 'PATH_ESCAPE',
    });
    const noBwrap = new StagedShell(ws, { view, bwrapPath: path.join(fx.base, 'no-such-bwrap') });
    const err = await noBwrap.run('echo x > x.txt', { timeoutMs: 1000 }).catch((e) => e);
    expect(err).toBeInstanceOf(ShellIsolationUnavailableError);
    expect(err.message).toMatch(/not installed.*isolation: 'none'/s);
    expect(await ws.exists('x.txt')).toBe(false);
    const open = new StagedShell(ws, { isolation: 'none' });
    const r = await open.run('echo y > y.txt; pwd', { timeoutMs: 10_000 });
    expect(r.isolation).toBe('none');
    expect(r.stdout.trim()).not.toBe(fx.root);
    expect(await ws.readFile('y.txt', 'utf8')).toBe('y\n');
    untouched();
  });
});
