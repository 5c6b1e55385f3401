/**
 * The escape suite, files: attacks through the public booth API (a run's ShadowBooth: its file API, its shell,
 * its change set and its commit) on directory commits, set-id modes, names that forge what a reviewer reads and
 * the run's staged bytes. Each checks the real targets (the workspace and a folder beside it) byte for byte
 * after the attempt and after the rollback.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CommitConflictError,
  DEFAULT_MAX_STAGED_BYTES,
  filesOnlyUnder,
  noFileDeletes,
  noSetIdModes,
  runGates,
  ShellLimitError,
  StagedBytesLimitError,
} from '../../../src/booth';
import { BoothRuntime, type ShadowBooth, type ShadowBoothConfig } from '../../../src/booth/shadowBooth';
import { fingerprint, makeWorld, type World } from './targets';

let world: World;
let runtime: BoothRuntime;
let runs = 0;

function start(config: Partial<ShadowBoothConfig> = {}): void {
  runtime = new BoothRuntime({ workspaceRoot: world.workspace, stagingRoot: world.staging, ...config });
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
const real = (p: string) => path.join(world.workspace, p);
const modeOf = (p: string) => fs.lstatSync(real(p)).mode & 0o7777;

/**
 * Stages with `stage`, lets someone else change the real tree (`meanwhile`), then commits: returns what commit
 * threw, after checking the real targets are exactly as they were before the commit and after the rollback.
 */
async function commitAfter(
  stage: (b: ShadowBooth) => Promise<void>,
  meanwhile: () => void,
): Promise<unknown> {
  const booth = await runtime.open('wf', `run${++runs}`);
  await stage(booth);
  meanwhile();
  const before = targets();
  const err = await booth.commitFiles().then(
    () => null,
    (e: unknown) => e,
  );
  expect(targets()).toEqual(before);
  await booth.discard();
  expect(targets()).toEqual(before);
  return err;
}

function expectConflict(err: unknown, paths: string[]): void {
  expect(err).toBeInstanceOf(CommitConflictError);
  expect((err as CommitConflictError).paths).toEqual(paths);
}

describe('a directory commit refuses when anything inside the real directory changed since staging', () => {
  const lateWork = () => {
    fs.writeFileSync(real('docs/guide.md'), '# guide, edited by a person\n');
    fs.writeFileSync(real('docs/api/new.md'), 'added by a person\n');
  };

  it('deleted directory', async () => {
    const err = await commitAfter((b) => b.files.rm('docs', { recursive: true }), lateWork);
    expectConflict(err, ['docs/api/new.md', 'docs/guide.md']);
  });

  it('deleted and recreated directory', async () => {
    const err = await commitAfter(async (b) => {
      await b.files.rm('docs', { recursive: true });
      await b.files.mkdir('docs');
      await b.files.writeFile('docs/readme.md', 'new docs\n');
    }, lateWork);
    expectConflict(err, ['docs/api/new.md', 'docs/guide.md']);
  });

  it('renamed directory', async () => {
    const err = await commitAfter(
      (b) => b.files.rename('docs', 'archive'),
      () => fs.writeFileSync(real('docs/api/index.md'), '# api v2\n'),
    );
    expectConflict(err, ['docs/api/index.md']);
  });

  it('directory renamed onto an empty real directory that gained a file', async () => {
    const err = await commitAfter(
      (b) => b.files.rename('docs', 'inbox'),
      () => fs.writeFileSync(real('inbox/mail.eml'), 'arrived after staging\n'),
    );
    expectConflict(err, ['inbox/mail.eml']);
  });

  it('directory replaced by a file', async () => {
    const err = await commitAfter(async (b) => {
      await b.files.rm('docs', { recursive: true });
      await b.files.writeFile('docs', 'now a file\n');
    }, lateWork);
    expectConflict(err, ['docs/api/new.md', 'docs/guide.md']);
  });

  it('directory deleted by a shell command', async () => {
    const err = await commitAfter(
      async (b) => void (await b.shell.run('rm -rf docs', { timeoutMs: 30_000 })),
      lateWork,
    );
    expectConflict(err, ['docs/api/new.md', 'docs/guide.md']);
  });

  it('directory deleted in a tool step, committed after the step checkpoint and a reopen', async () => {
    const run = `run${++runs}`;
    const step = await runtime.openStep('wf', run, { id: 'step-1', attempt: 1 });
    await step.booth.files.rm('docs', { recursive: true });
    await step.booth.completeStep({ ok: true });
    await step.booth.close();
    lateWork();
    const before = targets();
    const booth = await runtime.open('wf', run);
    const err = await booth.commitFiles().catch((e: unknown) => e);
    expectConflict(err, ['docs/api/new.md', 'docs/guide.md']);
    expect(targets()).toEqual(before);
    await booth.discard();
    expect(targets()).toEqual(before);
  });

  it('commits when nothing inside changed', async () => {
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.rm('docs', { recursive: true });
    await booth.files.rename('run.sh', 'inbox/run.sh');
    await booth.commitFiles();
    expect(fs.existsSync(real('docs'))).toBe(false);
    expect(fs.readFileSync(real('inbox/run.sh'), 'utf8')).toBe('#!/bin/sh\necho run\n');
  });
});

describe('setuid, setgid and sticky bits are stripped at staging and shown as a refused mode change', () => {
  const shell = fs.readFileSync('/bin/sh');

  async function expectRefusedModes(b: ShadowBooth): Promise<void> {
    const files = (await b.changeSet()).files;
    const tool = files.find((c) => c.path === 'tool')!;
    expect(tool.after).toMatchObject({ type: 'file', mode: 0o755 });
    expect(tool.modeRefused).toEqual({ requested: 0o4755, bits: ['setuid'] });
    expect(tool.summary).toContain('mode 4755 refused: setuid stripped');
    expect(await b.files.stat('tool')).toMatchObject({ mode: 0o755 });
  }

  it('through the file API', async () => {
    const before = targets();
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.writeFile('tool', shell, { mode: 0o4755 });
    await booth.files.chmod('run.sh', 0o6755);
    await booth.files.mkdir('shared', { mode: 0o1777 });
    await expectRefusedModes(booth);
    const files = (await booth.changeSet()).files;
    expect(files.find((c) => c.path === 'run.sh')!.modeRefused).toEqual({
      requested: 0o6755,
      bits: ['setuid', 'setgid'],
    });
    expect(files.find((c) => c.path === 'shared')!).toMatchObject({
      after: { type: 'dir', mode: 0o777 },
      modeRefused: { requested: 0o1777, bits: ['sticky'] },
    });
    const [verdict] = await runGates(['no-set-id'], { 'no-set-id': noSetIdModes() }, await booth.changeSet());
    expect(verdict).toEqual({
      gate: 'no-set-id',
      ok: false,
      reason:
        'asked for set-id or sticky modes: run.sh 6755 (setuid, setgid), shared 1777 (sticky), tool 4755 (setuid)',
    });
    expect(targets()).toEqual(before);
    await booth.discard();
    expect(targets()).toEqual(before);

    const again = await runtime.open('wf', `run${++runs}`);
    await again.files.writeFile('tool', shell, { mode: 0o4755 });
    await again.files.chmod('run.sh', 0o6755);
    await again.files.mkdir('shared', { mode: 0o1777 });
    await again.commitFiles();
    expect([modeOf('tool'), modeOf('run.sh'), modeOf('shared')]).toEqual([0o755, 0o755, 0o777]);
  });

  it('through a shell command (cp /bin/sh x; chmod 4755 x)', async () => {
    const before = targets();
    const booth = await runtime.open('wf', `run${++runs}`);
    const r = await booth.shell.run('cp /bin/sh tool && chmod 4755 tool', { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(0);
    await expectRefusedModes(booth);
    expect(targets()).toEqual(before);
    await booth.discard();
    expect(targets()).toEqual(before);

    const again = await runtime.open('wf', `run${++runs}`);
    await again.shell.run('cp /bin/sh tool && chmod 4755 tool', { timeoutMs: 30_000 });
    await again.commitFiles();
    expect(modeOf('tool')).toBe(0o755);
  });

  it('kept when the booth config allows them', async () => {
    await runtime.close();
    start({ files: { allowSpecialModes: true } });
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.writeFile('tool', shell, { mode: 0o4755 });
    const [change] = (await booth.changeSet()).files;
    expect(change).toMatchObject({ after: { mode: 0o4755 } });
    expect(change!.modeRefused).toBeUndefined();
    await booth.commitFiles();
    expect(modeOf('tool')).toBe(0o4755);
  });
});

describe('control characters in names cannot forge what a gate or a person reads', () => {
  const forged = 'x.txt\ndelete notes.txt: file, 6 bytes before';
  const bidi = 'invoice\u202Etxt.exe';

  it('in summaries, gate reasons and conflict errors', async () => {
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.writeFile(forged, 'a');
    await booth.files.writeFile(bidi, 'b');
    await booth.shell.run(`printf c > "$(printf 'from shell\\r\\033[2Kok')"`, { timeoutMs: 30_000 });
    const set = await booth.changeSet();
    expect(set.files.map((c) => c.summary)).toEqual([
      'write "from shell\\r\\u001b[2Kok": 0 -> 1 bytes, mode 644, +1 -0 lines',
      'write "invoice\\u202etxt.exe": 0 -> 1 bytes, mode 644, +1 -0 lines',
      'write "x.txt\\ndelete notes.txt: file, 6 bytes before": 0 -> 1 bytes, mode 644, +1 -0 lines',
    ]);
    for (const c of set.files) for (const ch of ['\u202E', '\r', '\x1b']) expect(c.diff).not.toContain(ch);
    const verdicts = await runGates(['only-docs'], { 'only-docs': filesOnlyUnder(['docs/']) }, set);
    expect(verdicts[0]!.reason.split('\n')).toHaveLength(1);
    expect(verdicts[0]!.reason).not.toContain('\u202E');

    fs.writeFileSync(real(forged), 'a person got there first\n');
    const err = await booth.commitFiles().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitConflictError);
    expect((err as Error).message.split('\n')).toHaveLength(1);
    expect((err as Error).message).toContain('"x.txt\\ndelete notes.txt: file, 6 bytes before"');
  });

  it('in deletions a gate refuses', async () => {
    fs.writeFileSync(real(bidi), 'real\n');
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.rm(bidi);
    const [v] = await runGates(['no-deletes'], { 'no-deletes': noFileDeletes() }, await booth.changeSet());
    expect(v).toEqual({ gate: 'no-deletes', ok: false, reason: 'would delete "invoice\\u202etxt.exe"' });
  });
});

describe("the run's staged bytes are limited", () => {
  it('a file API write past the limit stages nothing', async () => {
    await runtime.close();
    start({ files: { maxStagedBytes: 1024 * 1024 } });
    const before = targets();
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.writeFile('a.bin', Buffer.alloc(700 * 1024, 1));
    const err = await booth.files.writeFile('b.bin', Buffer.alloc(400 * 1024, 2)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StagedBytesLimitError);
    expect(err).toMatchObject({ code: 'STAGED_BYTES_LIMIT', limit: 1024 * 1024, attempted: 1100 * 1024 });
    expect((await booth.changeSet()).files.map((c) => c.path)).toEqual(['a.bin']);
    // Replacing a staged file by one of the same size is not growth.
    await booth.files.writeFile('a.bin', Buffer.alloc(700 * 1024, 3));
    expect(fs.readdirSync(path.join(booth.dir, 'files/blobs'))).toHaveLength(2);
    expect(targets()).toEqual(before);
    await booth.discard();
    expect(targets()).toEqual(before);
  });

  it('a shell command writing 600 MiB: stopped at 256 MiB in one file, refused at staging in three', async () => {
    expect(DEFAULT_MAX_STAGED_BYTES).toBe(256 * 1024 * 1024);
    const before = targets();
    const booth = await runtime.open('wf', `run${++runs}`);
    const one = await booth.shell
      .run('head -c 629145600 /dev/zero > big.bin', { timeoutMs: 120_000 })
      .catch((e: unknown) => e);
    expect(one).toBeInstanceOf(ShellLimitError);
    expect(one).toMatchObject({ limit: 'fileSize', value: 256 * 1024 * 1024, mechanism: 'rlimit' });
    const three = await booth.shell
      .run('for i in 1 2 3; do head -c 209715200 /dev/zero > part$i.bin; done', { timeoutMs: 120_000 })
      .catch((e: unknown) => e);
    expect(three).toBeInstanceOf(StagedBytesLimitError);
    expect(three).toMatchObject({ limit: DEFAULT_MAX_STAGED_BYTES, attempted: 629145600 });
    expect((await booth.changeSet()).files).toEqual([]);
    expect(targets()).toEqual(before);
    await booth.discard();
    expect(targets()).toEqual(before);
  });
});
