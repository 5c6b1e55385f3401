/**
 * The escape suite: each attempt tries to read or change something outside the workspace through the file
 * API, a shell command or SQL, and each checks the real disk afterwards (hash of the sentinel directory outside
 * the workspace, and of the real workspace itself, before and after) plus the typed error the booth gives.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PathEscapeError, PathRefusedError, StagedWorkspace } from '../../src/booth';
import { ShellChangesRefusedError, StagedShell } from '../../src/booth/shell';
import { SqlRefusedError, StagedSql } from '../../src/booth/sql';
import { type PostgresCluster, startPostgres } from '../support/postgres';
import { type Fixture, makeFixture, snapshot } from './helpers';

let fx: Fixture;
let ownTmp: string | undefined;
let ws: StagedWorkspace;
let shell: StagedShell;
let sqlite: StagedSql;
let pgSql: StagedSql;
let pg: PostgresCluster;
let realDb: string;

const hash = (dir: string) =>
  createHash('sha256')
    .update(JSON.stringify(snapshot(dir)))
    .digest('hex');
const fileHash = (f: string) => createHash('sha256').update(fs.readFileSync(f)).digest('hex');

const savedTmp = process.env.TMPDIR;

beforeAll(async () => {
  pg = await startPostgres();
  // The sandbox gives commands a private /tmp; a fixture outside /tmp shows the read-only host, not an empty one.
  // A checkout under /tmp (a CI work folder) would put .jukebox/ there too, so /var/tmp serves then.
  const inRepo = path.resolve(__dirname, '../../.jukebox/test-tmp');
  const underTmp = inRepo.startsWith(`${fs.realpathSync('/tmp')}/`) || inRepo.startsWith('/tmp/');
  fs.mkdirSync('/var/tmp', { recursive: true });
  const tmp = underTmp ? fs.mkdtempSync('/var/tmp/jukebox-escapes-') : inRepo;
  if (underTmp) ownTmp = tmp;
  fs.mkdirSync(tmp, { recursive: true });
  process.env.TMPDIR = tmp;
  fx = makeFixture({ hostile: true, stagingInside: true });
  ws = await StagedWorkspace.open({ root: fx.root, stagingDir: fx.staging });
  shell = new StagedShell(ws);
  realDb = path.join(fx.base, 'real.sqlite');
  const k = knexFactory({ client: 'sqlite3', connection: { filename: realDb }, useNullAsDefault: true });
  await k.raw('CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER)');
  await k.raw('INSERT INTO accounts (balance) VALUES (10), (20)');
  await k.destroy();
  sqlite = await StagedSql.open({
    client: 'sqlite3',
    connection: realDb,
    stagingDir: path.join(fx.base, 'sql-staging'),
  });
  const p = knexFactory({ client: 'pg', connection: pg.url });
  await p.raw('CREATE TABLE accounts (id SERIAL PRIMARY KEY, balance INTEGER)');
  await p.raw('INSERT INTO accounts (balance) VALUES (10), (20)');
  await p.destroy();
  pgSql = await StagedSql.open({
    client: 'pg',
    connection: pg.url,
    stagingDir: path.join(fx.base, 'pg-staging'),
  });
});
afterAll(async () => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  await sqlite?.close();
  await pgSql?.close();
  await pg?.stop();
  fx.cleanup();
  if (ownTmp) fs.rmSync(ownTmp, { recursive: true, force: true });
});

type Expectation =
  | { error: new (...a: never[]) => Error; reason?: string }
  /** The command ran and failed inside the sandbox; nothing outside changed and nothing was staged for it. */
  | { sandboxed: RegExp }
  /** The write landed in the staged view only. */
  | { staged: string };

type Attempt = [name: string, run: () => Promise<unknown>, expected: Expectation];

const out = () => fx.outside;
const secret = () => path.join(fx.outside, 'secret.txt');

const fileApi: Attempt[] = [
  [
    'read ../ out of the root',
    () => ws.readFile('../outside/secret.txt'),
    { error: PathEscapeError, reason: 'dotdot' },
  ],
  [
    'write ../ out of the root',
    () => ws.writeFile('../outside/new.txt', 'x'),
    { error: PathEscapeError, reason: 'dotdot' },
  ],
  [
    'write dir/../../ climbing out',
    () => ws.writeFile('dir/../../outside/secret.txt', 'x'),
    { error: PathEscapeError, reason: 'dotdot' },
  ],
  [
    'write an absolute path outside',
    () => ws.writeFile(secret(), 'x'),
    { error: PathEscapeError, reason: 'absolute-outside-root' },
  ],
  [
    'write through a dir symlink to outside',
    () => ws.writeFile('link-out/secret.txt', 'x'),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'overwrite a file symlink to outside',
    () => ws.writeFile('dir/link-secret', 'x'),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'create through a dangling symlink to outside',
    () => ws.writeFile('dangling-out', 'x'),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'read through an absolute symlink to /etc',
    () => ws.readFile('abs-link/passwd'),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'overwrite a hard link shared with a file outside',
    () => ws.writeFile('hard', 'pwned'),
    { error: PathRefusedError, reason: 'hard-link' },
  ],
  [
    'append to a hard link shared with a file outside',
    () => ws.appendFile('hard', 'pwned'),
    { error: PathRefusedError, reason: 'hard-link' },
  ],
  [
    'a NUL byte truncating the path',
    () => ws.writeFile('a.txt\0/../../outside/secret.txt', 'x'),
    { error: PathRefusedError, reason: 'nul-byte' },
  ],
  [
    'a name over 255 bytes',
    () => ws.writeFile('n'.repeat(256), 'x'),
    { error: PathRefusedError, reason: 'name-too-long' },
  ],
  [
    'a path over 4096 bytes',
    () => ws.writeFile('d/'.repeat(2100), 'x'),
    { error: PathRefusedError, reason: 'path-too-long' },
  ],
  [
    'a Windows ..\\ separator',
    () => ws.writeFile('..\\outside\\secret.txt', 'x'),
    { error: PathRefusedError, reason: 'backslash' },
  ],
  [
    'rename a file out of the root',
    () => ws.rename('a.txt', '../outside/a.txt'),
    { error: PathEscapeError, reason: 'dotdot' },
  ],
  [
    'mkdir -p through a symlink to outside',
    () => ws.mkdir('link-out/new/deep', { recursive: true }),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'rm -r through a symlink to outside',
    () => ws.rm('link-out/dir', { recursive: true }),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'write into the staging area inside the root',
    () => ws.writeFile('.jukebox-staging/manifest.json', '{}'),
    { error: PathRefusedError, reason: 'staging-dir' },
  ],
];

const viaShell: Attempt[] = [
  [
    'shell: write ../outside relative to the root',
    () => shell.run('echo x > ../outside/secret.txt', { timeoutMs: 10_000 }),
    { sandboxed: /Read-only file system/ },
  ],
  [
    'shell: write an absolute path outside',
    () => shell.run(`echo x > ${secret()}`, { timeoutMs: 10_000 }),
    { sandboxed: /Read-only file system/ },
  ],
  [
    'shell: make a symlink to outside and write through it',
    () => shell.run(`ln -s ${out()} o && echo x > o/secret.txt`, { timeoutMs: 10_000 }),
    { sandboxed: /Read-only file system/ },
  ],
  [
    'shell: hard-link a file from outside into the workspace',
    () => shell.run(`ln ${secret()} stolen`, { timeoutMs: 10_000 }),
    { sandboxed: /Invalid cross-device link/ },
  ],
  [
    'shell: rm -rf the outside directory',
    () => shell.run(`rm -rf ${out()}`, { timeoutMs: 10_000 }),
    { sandboxed: /Read-only file system/ },
  ],
  [
    'shell: write through /proc/self/root',
    () => shell.run(`echo x > /proc/self/root${secret()}`, { timeoutMs: 10_000 }),
    { sandboxed: /Read-only file system/ },
  ],
  [
    'shell: mount a tmpfs over the outside directory',
    () => shell.run(`mount -t tmpfs none ${out()} && echo x > ${secret()}`, { timeoutMs: 10_000 }),
    { sandboxed: /denied|not permitted|superuser|Read-only/i },
  ],
  [
    'shell: chmod a file outside',
    () => shell.run(`chmod 777 ${secret()}`, { timeoutMs: 10_000 }),
    { sandboxed: /Read-only file system/ },
  ],
  [
    'shell: cwd ../outside',
    () => shell.run('echo x > secret.txt', { timeoutMs: 10_000, cwd: '../outside' }),
    { error: PathEscapeError, reason: 'dotdot' },
  ],
  [
    'shell: cwd through a symlink to outside',
    () => shell.run('echo x > secret.txt', { timeoutMs: 10_000, cwd: 'link-out' }),
    { error: PathEscapeError, reason: 'symlink-outside-root' },
  ],
  [
    'shell: replace a hard-linked file by name',
    () => shell.run('echo pwned > hard', { timeoutMs: 10_000 }),
    { error: ShellChangesRefusedError },
  ],
  [
    'shell: write the real workspace by its absolute path',
    () => shell.run(`echo x > ${fx.root}/abs-escape.txt`, { timeoutMs: 10_000 }),
    { staged: 'abs-escape.txt' },
  ],
];

const outsideDb = () => path.join(fx.outside, 'stolen.db');
const viaSql: Attempt[] = [
  [
    'sqlite: ATTACH another database file',
    () => sqlite.query(`ATTACH DATABASE '${outsideDb()}' AS stolen`),
    { error: SqlRefusedError, reason: 'attach' },
  ],
  [
    'sqlite: attach hidden by case and a comment',
    () => sqlite.query(`AtTaCh /* x */ '${outsideDb()}' AS s`),
    { error: SqlRefusedError, reason: 'attach' },
  ],
  [
    'sqlite: ATTACH after a harmless statement',
    () => sqlite.query(`SELECT 1; ATTACH '${outsideDb()}' AS s`),
    { error: SqlRefusedError, reason: 'multiple-statements' },
  ],
  [
    'sqlite: VACUUM INTO a file outside',
    () => sqlite.query(`VACUUM INTO '${outsideDb()}'`),
    { error: SqlRefusedError, reason: 'vacuum' },
  ],
  [
    'sqlite: load_extension',
    () => sqlite.query("SELECT load_extension('/tmp/x.so')"),
    { error: SqlRefusedError, reason: 'load-extension' },
  ],
  [
    'sqlite: PRAGMA temp_store_directory outside',
    () => sqlite.query(`PRAGMA temp_store_directory = '${out()}'`),
    { error: SqlRefusedError, reason: 'pragma' },
  ],
  [
    'sqlite: rewrite the booth log',
    () => sqlite.query('DROP TABLE _jukebox_log'),
    { error: SqlRefusedError, reason: 'internal-table' },
  ],
  [
    'pg: COPY a table to a server file',
    () => pgSql.query(`COPY accounts TO '${path.join(out(), 'leak.csv')}'`),
    { error: SqlRefusedError, reason: 'file-access' },
  ],
  [
    'pg: pg_read_file',
    () => pgSql.query("SELECT pg_read_file('/etc/passwd')"),
    { error: SqlRefusedError, reason: 'file-access' },
  ],
  [
    'pg: lo_export to a file',
    () => pgSql.query(`SELECT lo_export(1, '${path.join(out(), 'x')}')`),
    { error: SqlRefusedError, reason: 'file-access' },
  ],
  [
    'pg: SET search_path to the real schema',
    () => pgSql.query('SET search_path TO public'),
    { error: SqlRefusedError, reason: 'session-setting' },
  ],
  [
    'pg: write the real schema by qualified name',
    () => pgSql.query('UPDATE public.accounts SET balance = 0'),
    { error: SqlRefusedError, reason: 'schema-qualified' },
  ],
  [
    'pg: anonymous code block',
    () => pgSql.query("DO $$ BEGIN EXECUTE 'UPDATE public.accounts SET balance = 0'; END $$"),
    { error: SqlRefusedError, reason: 'code-execution' },
  ],
];

describe('escape attempts', () => {
  const all = [...fileApi, ...viaShell, ...viaSql];
  it('has at least 30 distinct attempts', () => {
    expect(new Set(all.map((a) => a[0])).size).toBe(all.length);
    expect(all.length).toBeGreaterThanOrEqual(30);
  });

  it.each(all)('%s', async (_name, run, expected) => {
    const skip = ['.jukebox-staging'];
    const before = { outside: hash(fx.outside), root: snapshot(fx.root, skip), db: fileHash(realDb) };
    const stagedBefore = await ws.changes();
    const got = await run().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    if ('error' in expected) {
      expect('error' in got, 'the attempt must be refused').toBe(true);
      const err = (got as { error: Error & { reason?: string; code?: string } }).error;
      expect(err).toBeInstanceOf(expected.error);
      expect(err.code).toMatch(/^[A-Z_]+$/);
      if (expected.reason !== undefined) expect(err.reason).toBe(expected.reason);
    } else {
      const r = (got as { value: { exitCode: number | null; stderr: string; changes: { path: string }[] } })
        .value;
      expect(r, 'the command runs in the sandbox').toBeDefined();
      if ('sandboxed' in expected) {
        expect(r.exitCode).not.toBe(0);
        expect(r.stderr).toMatch(expected.sandboxed);
        expect(r.changes).toEqual([]);
      } else {
        expect(r.changes.map((c) => c.path)).toEqual([expected.staged]);
        expect(await ws.readFile(expected.staged, 'utf8')).toBe('x\n');
      }
    }
    expect(hash(fx.outside)).toBe(before.outside);
    expect(snapshot(fx.root, skip)).toEqual(before.root);
    expect(fileHash(realDb)).toBe(before.db);
    expect(fs.existsSync(outsideDb())).toBe(false);
    // Nothing an escape attempt did reached the staged change set either (the shell's ln -s is dropped).
    const staged = 'staged' in expected ? [expected.staged] : [];
    expect((await ws.changes()).map((c) => c.path).sort()).toEqual(
      [...stagedBefore.map((c) => c.path), ...staged].sort(),
    );
  });

  it('left the real PostgreSQL table and schemas as they were after every pg attempt', async () => {
    const p = knexFactory({ client: 'pg', connection: pg.url });
    try {
      const rows = (await p.raw('SELECT id, balance FROM public.accounts ORDER BY id')).rows;
      expect(rows).toEqual([
        { id: 1, balance: 10 },
        { id: 2, balance: 20 },
      ]);
      expect(fs.existsSync(path.join(fx.outside, 'leak.csv'))).toBe(false);
    } finally {
      await p.destroy();
    }
  });

  it('commit refuses a parent swapped for a symlink to outside after staging', async () => {
    const f = makeFixture();
    try {
      const w = await StagedWorkspace.open({ root: f.root, stagingDir: f.staging });
      await w.writeFile('dir/b.txt', 'replaced');
      const outsideBefore = hash(f.outside);
      fs.renameSync(path.join(f.root, 'dir'), path.join(f.base, 'moved-dir'));
      fs.symlinkSync(f.outside, path.join(f.root, 'dir'));
      const err = await w.commit().catch((e) => e);
      expect(err).toBeInstanceOf(PathEscapeError);
      expect(hash(f.outside)).toBe(outsideBefore);
    } finally {
      f.cleanup();
    }
  });

  it('a command that turns a staged file into a symlink to outside commits no symlink', async () => {
    const f = makeFixture();
    try {
      const w = await StagedWorkspace.open({ root: f.root, stagingDir: f.staging });
      const r = await new StagedShell(w).run(`rm a.txt && ln -s ${f.outside}/secret.txt a.txt`, {
        timeoutMs: 10_000,
      });
      expect(r.skipped).toEqual([{ path: 'a.txt', reason: 'symlink' }]);
      const outsideBefore = hash(f.outside);
      await w.commit();
      expect(fs.existsSync(path.join(f.root, 'a.txt'))).toBe(false);
      expect(hash(f.outside)).toBe(outsideBefore);
    } finally {
      f.cleanup();
    }
  });
});
