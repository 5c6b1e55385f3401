/**
 * The escape suite, what the booth owns inside the workspace: a staging root under the workspace root (the
 * default `.jukebox/staging` of a worker started in the project it works on) and, on SQLite, the database file
 * itself beside the agent's files. Through the run's file API and its shell (both views), the agent tries to
 * rewrite the database's file (past SQL confinement and the gates that read its statements), to rewrite another
 * run's staging, and to read its own SQL session's state (the PostgreSQL session role's password). Each attempt
 * is refused typed; the real targets (the workspace without the staging root, a folder beside it, the database:
 * the SQLite file's bytes or every PostgreSQL table row by row) hash the same with sha256 after the attempt and
 * again after the run rolls back.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PathRefusedError } from '../../../src/booth';
import { BoothRuntime, type ShadowBooth } from '../../../src/booth/shadowBooth';
import { ShellChangesRefusedError } from '../../../src/booth/shell';
import { type PostgresCluster, startPostgres } from '../../support/postgres';
import { snapshot } from '../helpers';
import { makeWorld, type World } from './targets';

let pg: PostgresCluster;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await pg?.stop();
});

const STAGING = '.jukebox/staging';

describe.each(['sqlite3', 'pg'] as const)('what the booth owns inside the workspace, on %s', (kind) => {
  let world: World;
  let runtime: BoothRuntime;
  let admin: Knex;
  let runs = 0;
  /** The other run: it staged a file, so its manifest is there to be rewritten. */
  let otherManifest: string;
  let sqlState: string;

  const targets = async () => {
    const h = createHash('sha256');
    h.update(JSON.stringify(snapshot(world.workspace, ['.jukebox'])));
    h.update(JSON.stringify(snapshot(world.outside)));
    if (kind === 'pg') {
      const rows = (await admin.raw('SELECT x::text AS r FROM public.accounts AS x ORDER BY 1')).rows as {
        r: string;
      }[];
      h.update(rows.map((r) => r.r).join('\n'));
    }
    return h.digest('hex');
  };

  beforeAll(async () => {
    world = makeWorld();
    let sql: ConstructorParameters<typeof BoothRuntime>[0]['sql'];
    if (kind === 'sqlite3') {
      const filename = path.join(world.workspace, 'app.sqlite');
      admin = knexFactory({ client: 'sqlite3', connection: { filename }, useNullAsDefault: true });
      sql = { client: 'sqlite3', connection: { filename } };
    } else {
      const root = knexFactory({ client: 'pg', connection: pg.url });
      await root.raw('CREATE DATABASE booth_owned');
      await root.destroy();
      const url = new URL(pg.url);
      url.pathname = '/booth_owned';
      admin = knexFactory({ client: 'pg', connection: url.toString() });
      sql = { client: 'pg', connection: url.toString() };
    }
    await admin.raw('CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)');
    await admin.raw('INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 50)');
    if (kind === 'sqlite3') await admin.destroy();
    runtime = new BoothRuntime({
      workspaceRoot: world.workspace,
      stagingRoot: path.join(world.workspace, STAGING),
      sql,
    });
    const other = await runtime.open('wf', 'other');
    await other.files.writeFile('notes.txt', 'the other run\n');
    await other.close();
    otherManifest = path.relative(world.workspace, path.join(other.dir, 'files/manifest.json'));
    expect(fs.existsSync(path.join(world.workspace, otherManifest))).toBe(true);
  });
  afterAll(async () => {
    await runtime?.close();
    if (kind === 'pg') await admin?.destroy();
    world?.cleanup();
  });

  /**
   * A fresh run that has staged a statement (so its SQL state exists), then `attack`: returns what it threw,
   * after checking the real targets are unchanged after the attempt and after the rollback.
   */
  async function attempt(attack: (b: ShadowBooth) => Promise<unknown>): Promise<unknown> {
    const before = await targets();
    const booth = await runtime.open('wf', `run${++runs}`);
    try {
      await (await booth.sql()).query('UPDATE accounts SET balance = balance + 1 WHERE id = ?', [2]);
      sqlState = path.relative(world.workspace, path.join(booth.dir, 'sql/sql-state.json'));
      expect(fs.existsSync(path.join(world.workspace, sqlState))).toBe(true);
      const err = await attack(booth).then(
        () => null,
        (e: unknown) => e,
      );
      expect((await booth.changeSet()).files).toEqual([]);
      await booth.commitFiles();
      expect(await targets()).toBe(before);
      await booth.discard();
      expect(await targets()).toBe(before);
      return err;
    } finally {
      await booth.close();
    }
  }

  const refused = (err: unknown, p: string, reason: 'booth-owned' | 'staging-dir' = 'booth-owned') => {
    expect(err).toBeInstanceOf(PathRefusedError);
    expect(err).toMatchObject({ code: 'PATH_REFUSED', path: p, reason });
  };

  // Only SQLite keeps its database as a file in the workspace; PostgreSQL's variant has no such target.
  if (kind === 'sqlite3') {
    it('the database file: rewritten, deleted or renamed by the file API', async () => {
      for (const attack of [
        (b: ShadowBooth) => b.files.writeFile('app.sqlite', 'DELETE FROM accounts'),
        (b: ShadowBooth) => b.files.rm('app.sqlite'),
        (b: ShadowBooth) => b.files.rename('app.sqlite', 'inbox/app.sqlite'),
        (b: ShadowBooth) => b.files.writeFile('app.sqlite-journal', 'a forged rollback journal'),
      ]) {
        const err = await attempt(attack);
        expect(err).toBeInstanceOf(PathRefusedError);
        expect((err as PathRefusedError).reason).toBe('booth-owned');
        expect((err as Error).message).toContain('booth.sql()');
      }
      refused(await attempt((b) => b.files.readFile('app.sqlite')), 'app.sqlite');
    });

    it.each(['overlay', 'copy'] as const)(
      'the database file: rewritten by a shell command (%s view)',
      async (view) => {
        await runtime.close();
        runtime = new BoothRuntime({ ...runtime.config, shell: { view } });
        const err = await attempt((b) =>
          b.shell.run('ls -A; printf junk > app.sqlite', { timeoutMs: 60_000 }),
        );
        expect(err).toBeInstanceOf(ShellChangesRefusedError);
        expect((err as Error).message).toContain('"app.sqlite" was refused');
      },
    );
  }

  it("another run's staging: rewritten by the file API", async () => {
    refused(await attempt((b) => b.files.writeFile(otherManifest, '{}')), otherManifest);
    refused(await attempt((b) => b.files.rm(STAGING, { recursive: true })), STAGING);
    refused(await attempt((b) => b.files.readdir('.jukebox/staging/wf')), '.jukebox/staging/wf');
  });

  it("the run's own SQL session state (its role's password on PostgreSQL): read by the file API", async () => {
    const err = await attempt((b) => b.files.readFile(sqlState, 'utf8'));
    refused(err, sqlState);
    expect((err as Error).message).not.toContain('password');
  });

  it.each(['overlay', 'copy'] as const)(
    'the staging root is not in a shell command’s view, and writing there is refused (%s view)',
    async (view) => {
      await runtime.close();
      runtime = new BoothRuntime({ ...runtime.config, shell: { view } });
      const booth = await runtime.open('wf', `run${++runs}`);
      const r = await booth.shell.run(['ls', '-A', '.jukebox'], { timeoutMs: 60_000 });
      expect([r.exitCode, r.stdout]).toEqual([0, '']);
      expect((await booth.files.readdir('.jukebox')).length).toBe(0);
      await booth.discard();
      await booth.close();
      const err = await attempt((b) =>
        b.shell.run(`mkdir -p ${path.dirname(otherManifest)} && echo {} > ${otherManifest}`, {
          timeoutMs: 60_000,
        }),
      );
      expect(err).toBeInstanceOf(ShellChangesRefusedError);
      expect((err as Error).message).toContain('(booth-owned)');
    },
  );

  it('what the agent may change is still staged and committed beside them', async () => {
    const booth = await runtime.open('wf', `run${++runs}`);
    await booth.files.writeFile('docs/new.md', 'new\n');
    await (await booth.sql()).query('UPDATE accounts SET balance = 7 WHERE id = ?', [1]);
    await booth.commitFiles();
    await booth.commitSql();
    await booth.close();
    expect(fs.readFileSync(path.join(world.workspace, 'docs/new.md'), 'utf8')).toBe('new\n');
    const k =
      kind === 'pg'
        ? admin
        : knexFactory({
            client: 'sqlite3',
            connection: { filename: path.join(world.workspace, 'app.sqlite') },
            useNullAsDefault: true,
          });
    expect(await k('accounts').select('id', 'balance').orderBy('id')).toEqual([
      { id: 1, balance: 7 },
      { id: 2, balance: 50 },
    ]);
    if (kind === 'sqlite3') await k.destroy();
  });
});

it('a staging root that holds the workspace (not refusable as a whole) still stages and commits', async () => {
  const world = makeWorld();
  try {
    const runtime = new BoothRuntime({ workspaceRoot: world.workspace, stagingRoot: world.base });
    const booth = await runtime.open('wf', 'run');
    await booth.files.writeFile('notes.txt', 'staged\n');
    expect((await booth.changeSet()).files.map((c) => c.path)).toEqual(['notes.txt']);
    await booth.commitFiles();
    await booth.close();
    await runtime.close();
    expect(fs.readFileSync(path.join(world.workspace, 'notes.txt'), 'utf8')).toBe('staged\n');
  } finally {
    world.cleanup();
  }
});
