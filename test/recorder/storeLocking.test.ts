import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TapeLockTimeoutError, TapeStore, withFileLock } from '../../src/recorder';
import { readTape, verifyTape } from '../../src/recorder/tape';
import { RUN, tempDir } from './helpers';

const ROOT = path.resolve(__dirname, '../..');
const APPEND = path.join(__dirname, 'fixtures/appendSteps.ts');

function runAppender(
  dir: string,
  name: string,
  steps: number,
  startAtMs: number,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const args = ['--import', 'tsx', APPEND, dir, name, String(steps), String(startAtMs)];
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** A pid that certainly belongs to no running process: one that just exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

describe('the tape store serializes writers of one run', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('two processes appending to the same run produce one consistent tape that verifies', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const steps = 25;
    // Both start appending at the same moment: process start-up alone (~1 s) would otherwise let one finish first.
    const startAt = Date.now() + 3_000;
    const results = await Promise.all([
      runAppender(t.dir, 'A', steps, startAt),
      runAppender(t.dir, 'B', steps, startAt),
    ]);
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });

    const file = new TapeStore({ dir: t.dir }).pathFor(RUN.workflowId, RUN.runId);
    const report = verifyTape(file);
    expect(report).toMatchObject({ ok: true, tornTail: null });
    const tape = readTape(file);
    const starts = tape.frames
      .filter((f) => f.kind === 'activity.start')
      .map((f) => f.payload as { activityId: string; pid: number });
    const completes = tape.frames.filter((f) => f.kind === 'activity.complete');
    expect(starts).toHaveLength(2 * steps);
    expect(completes).toHaveLength(2 * steps);
    expect(new Set(starts.map((s) => s.pid)).size).toBe(2);
    // The blob both wrote is stored once: the second process saw the first one's copy after reopening.
    expect(tape.blobs.size).toBe(1);
    // Each process's steps appear in its own order, and a step's start and complete are adjacent (one batch).
    for (const name of ['A', 'B']) {
      const mine = starts.filter((s) => s.activityId.startsWith(`${name}-`)).map((s) => s.activityId);
      expect(mine).toEqual(Array.from({ length: steps }, (_, i) => `${name}-${i}`));
    }
    const order = tape.frames
      .filter((f) => f.kind !== 'blob')
      .map((f) => `${f.kind}:${(f.payload as { activityId: string }).activityId}`);
    for (let i = 0; i < order.length; i += 2)
      expect(order[i + 1]).toBe(order[i]!.replace('activity.start', 'activity.complete'));
    // Interleaved, so the test really exercised the reopen path.
    const firstB = starts.findIndex((s) => s.activityId.startsWith('B-'));
    const lastA = starts.map((s) => s.activityId.startsWith('A-')).lastIndexOf(true);
    expect(firstB).toBeLessThan(lastA);
  });

  it('a store in one process continues a tape another store appended to in the meantime', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const a = new TapeStore({ dir: t.dir, fsync: 'none' });
    const b = new TapeStore({ dir: t.dir, fsync: 'none' });
    const append = (store: TapeStore, id: string) =>
      store.withTape(RUN, (s) =>
        s.append({ kind: 'activity.complete', step: 0, payload: { activityId: id, attempt: 1 } }),
      );
    await append(a, 'a1');
    await append(b, 'b1');
    await append(a, 'a2');
    await append(b, 'b2');
    await a.close();
    await b.close();
    const tape = readTape(a.pathFor(RUN.workflowId, RUN.runId));
    expect(tape.frames.map((f) => (f.payload as { activityId: string }).activityId)).toEqual([
      'a1',
      'b1',
      'a2',
      'b2',
    ]);
  });

  it('breaks a lock left behind by a process that died holding it', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const store = new TapeStore({ dir: t.dir, fsync: 'none', lockTimeoutMs: 20_000 });
    const file = store.pathFor(RUN.workflowId, RUN.runId);
    writeFileSync(`${file}.lock`, JSON.stringify({ pid: deadPid(), host: hostname() }));
    const started = Date.now();
    await store.withTape(RUN, (s) => s.append({ kind: 'clock', step: 0, payload: { seq: 0, nowMs: 1 } }));
    // Broken at once, not waited out: far less than the lock timeout even on a busy machine.
    expect(Date.now() - started).toBeLessThan(5_000);
    await store.close();
    expect(verifyTape(file).frames).toBe(1);
  });

  it('waits for a live holder and gives up with a typed error naming the lock and its owner', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const lock = path.join(t.dir, 'x.lock');
    let release!: () => void;
    const holding = withFileLock(lock, () => new Promise<void>((r) => (release = r)));
    await new Promise((r) => setTimeout(r, 20));
    const err = await withFileLock(lock, async () => 'never', { timeoutMs: 150 }).catch((e) => e);
    expect(err).toBeInstanceOf(TapeLockTimeoutError);
    expect((err as Error).message).toContain(lock);
    expect((err as Error).message).toContain(`pid ${process.pid}`);
    release();
    await holding;
    await expect(withFileLock(lock, async () => 'got it', { timeoutMs: 150 })).resolves.toBe('got it');
  });
});

describe("the tape lock is a hard link of its process's owner file", () => {
  const owners = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.jbx-lock-owner-'));

  it("holds the owner's pid and host while taken, and is gone once released", async () => {
    const t = tempDir();
    try {
      const lock = path.join(t.dir, 'run.jbx.lock');
      const seen = await withFileLock(
        lock,
        async () => ({
          bytes: JSON.parse(readFileSync(lock, 'utf8')) as unknown,
          links: statSync(lock).nlink,
        }),
        { ownerLink: true },
      );
      expect(seen).toEqual({ bytes: { pid: process.pid, host: hostname() }, links: 2 });
      expect(existsSync(lock)).toBe(false);
      // One owner file for the folder, however many locks the process takes there.
      await withFileLock(path.join(t.dir, 'other.jbx.lock'), async () => {}, { ownerLink: true });
      expect(owners(t.dir)).toHaveLength(1);
      expect(statSync(path.join(t.dir, owners(t.dir)[0]!)).nlink).toBe(1);
    } finally {
      t.cleanup();
    }
  });

  it('a process removes its owner file when it exits, and the owner files of dead processes on this host', async () => {
    const t = tempDir();
    try {
      const dead = path.join(t.dir, `.jbx-lock-owner-${deadPid()}-abc`);
      writeFileSync(dead, JSON.stringify({ pid: Number(dead.split('-').at(-2)), host: hostname() }));
      const elsewhere = path.join(t.dir, '.jbx-lock-owner-1-def');
      writeFileSync(elsewhere, JSON.stringify({ pid: 1, host: `${hostname()}-other` }));
      const child = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '-e',
          `require(${JSON.stringify(path.join(ROOT, 'src/recorder/lock.ts'))}).withFileLock(${JSON.stringify(path.join(t.dir, 'x.lock'))}, async () => {}, { ownerLink: true })`,
        ],
        { cwd: ROOT, encoding: 'utf8' },
      );
      expect(child.status, child.stderr).toBe(0);
      // The dead process's file is gone, another host's is not ours to judge, the child's own went at exit.
      expect(owners(t.dir)).toEqual([path.basename(elsewhere)]);
      expect(existsSync(path.join(t.dir, 'x.lock'))).toBe(false);
    } finally {
      t.cleanup();
    }
  });

  it('a lock without ownerLink is a file of its own and leaves nothing behind', async () => {
    const t = tempDir();
    try {
      const lock = path.join(t.dir, 'manifest.json.lock');
      const links = await withFileLock(lock, async () => statSync(lock).nlink);
      expect(links).toBe(1);
      expect(readdirSync(t.dir)).toEqual([]);
    } finally {
      t.cleanup();
    }
  });
});

describe('the tape store folder', () => {
  it('is created on the first append, however deep', async () => {
    const t = tempDir();
    try {
      const store = new TapeStore({ dir: path.join(t.dir, 'a/b/tapes'), fsync: 'none' });
      await store.withTape(RUN, (s) => s.append({ kind: 'clock', step: 0, payload: { seq: 0, nowMs: 1 } }));
      await store.close();
      expect(verifyTape(store.pathFor(RUN.workflowId, RUN.runId)).ok).toBe(true);
    } finally {
      t.cleanup();
    }
  });
});
