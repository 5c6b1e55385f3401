/**
 * SQL escape attempts through a run's booth (`booth.sql().query`), the way a prompt-injected agent would write
 * them: identifier bindings naming the real schema or the booth's own tables, `U&` escaped identifiers, quoted
 * calls of server functions, a statement that never ends. Each is refused with a typed error naming the object,
 * and the real targets (the SQLite file's bytes, every PostgreSQL table outside the run's own schemas, a file
 * beside them) hash the same with sha256 after the attempt and again after the run rolls back.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoothRuntime, type ShadowBooth } from '../../src/booth/shadowBooth';
import { SqlRefusedError, SqlStatementTimeoutError, SqlTamperedError } from '../../src/booth/sql';
import { type PostgresCluster, startPostgres } from '../support/postgres';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-sql-esc-')));
let pg: PostgresCluster;
let runs = 0;

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

interface World {
  name: 'sqlite3' | 'pg';
  runtime: BoothRuntime;
  /** sha256 over every real target: the database's user data and a file of the server's host. */
  realHash(): Promise<string>;
  /** A connection to the real database with the owner's rights (the test's, never the agent's). */
  admin: Knex;
  close(): Promise<void>;
}

const secretFile = () => path.join(base, 'server-secret.txt');

async function sqliteWorld(): Promise<World> {
  const dir = path.join(base, `sqlite-${++runs}`);
  fs.mkdirSync(dir);
  const file = path.join(dir, 'real.sqlite');
  const admin = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
  await admin.raw(
    'CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL)',
  );
  await admin.raw("INSERT INTO accounts (owner, balance) VALUES ('ann', 100), ('bob', 50)");
  // Objects someone else left in the real database, naming the booth's tables without the agent spelling them:
  // only SQLite's compiled program shows what they reach.
  await admin.raw('CREATE TABLE ledger (x INTEGER)');
  await admin.raw(
    "CREATE TRIGGER plant AFTER INSERT ON ledger BEGIN INSERT INTO _jukebox_log (kind, statement, params, rows_affected, names, verb) VALUES ('write', 'DELETE FROM accounts', '[]', 0, '[]', 'delete'); END",
  );
  await admin.raw('CREATE VIEW peek AS SELECT * FROM _jukebox_log');
  await admin.destroy();
  const runtime = new BoothRuntime({
    workspaceRoot: dir,
    stagingRoot: path.join(dir, 'staging'),
    sql: { client: 'sqlite3', connection: { filename: file }, statementTimeoutMs: 1_000 },
  });
  const admin2 = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
  return {
    name: 'sqlite3',
    runtime,
    admin: admin2,
    async realHash() {
      const parts = [fs.readFileSync(file), fs.readFileSync(secretFile())];
      for (const suffix of ['-journal', '-wal']) expect(fs.existsSync(file + suffix)).toBe(false);
      return sha256(Buffer.concat(parts));
    },
    async close() {
      await runtime.close();
      await admin2.destroy();
    },
  };
}

async function pgWorld(): Promise<World> {
  const db = `esc_${++runs}`;
  const root = knexFactory({ client: 'pg', connection: pg.url });
  await root.raw(`CREATE DATABASE ${db}`);
  await root.destroy();
  const url = new URL(pg.url);
  url.pathname = `/${db}`;
  const admin = knexFactory({ client: 'pg', connection: url.toString() });
  await admin.raw(
    'CREATE TABLE accounts (id SERIAL PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL)',
  );
  await admin.raw("INSERT INTO accounts (owner, balance) VALUES ('ann', 100), ('bob', 50)");
  await admin.raw('CREATE SCHEMA other');
  await admin.raw('CREATE TABLE other.secrets (k TEXT PRIMARY KEY, v TEXT)');
  await admin.raw("INSERT INTO other.secrets VALUES ('api', 'TOP SECRET')");
  const dir = path.join(base, `pg-${runs}`);
  fs.mkdirSync(dir);
  const runtime = new BoothRuntime({
    workspaceRoot: dir,
    stagingRoot: path.join(dir, 'staging'),
    sql: { client: 'pg', connection: url.toString(), statementTimeoutMs: 1_000 },
  });
  return {
    name: 'pg',
    runtime,
    admin,
    async realHash() {
      // Every table of every schema but the catalogs and the run's own shadow and booth schemas, row by row.
      const tables = (
        await admin.raw(
          "SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND schemaname NOT LIKE 'jbx\\_%' ORDER BY 1",
        )
      ).rows as { t: string }[];
      const h = createHash('sha256');
      for (const { t } of tables) {
        const rows = (await admin.raw(`SELECT x::text AS r FROM ${t} AS x ORDER BY 1`)).rows as {
          r: string;
        }[];
        h.update(`${t}\n${rows.map((r) => r.r).join('\n')}\n`);
      }
      h.update(fs.readFileSync(secretFile()));
      return h.digest('hex');
    },
    async close() {
      await runtime.close();
      await admin.destroy();
    },
  };
}

beforeAll(async () => {
  pg = await startPostgres();
  fs.writeFileSync(secretFile(), 'server secret\n');
});
afterAll(async () => {
  await pg?.stop();
  fs.rmSync(base, { recursive: true, force: true });
});

type Attack = {
  name: string;
  run: (booth: ShadowBooth) => Promise<unknown>;
  /** The object the refusal must name. */
  object: string;
};

/** Runs one attack against a fresh run: refused, typed, naming the object; the real targets unchanged twice. */
async function attempt(w: World, attack: Attack): Promise<void> {
  const before = await w.realHash();
  const booth = await w.runtime.open('wf', `run-${++runs}`);
  try {
    // The run stages something legitimate first, so a rollback has something to throw away.
    await (await booth.sql()).query('UPDATE accounts SET balance = balance + 1 WHERE owner = ?', ['bob']);
    const err = await attack.run(booth).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err, `${attack.name} must be refused`).toBeInstanceOf(SqlRefusedError);
    expect((err as { code: string }).code).toMatch(/^SQL_[A-Z_]+$/);
    expect((err as Error).message).toContain(attack.object);
    expect(await w.realHash()).toBe(before);
    await booth.discard();
    expect(await w.realHash()).toBe(before);
  } finally {
    await booth.close();
  }
}

describe.each(['sqlite3', 'pg'] as const)('SQL escapes through the booth on %s', (kind) => {
  let w: World;
  beforeAll(async () => {
    w = kind === 'pg' ? await pgWorld() : await sqliteWorld();
  });
  afterAll(async () => {
    await w?.close();
  });

  const q = (booth: ShadowBooth, sql: string, bindings?: unknown[]) =>
    booth.sql().then((s) => s.query(sql, bindings));

  const common: Attack[] = [
    {
      name: 'an identifier binding naming the booth log',
      run: (b) =>
        q(
          b,
          'INSERT INTO ?? (kind, statement, params, rows_affected, names, verb, result) VALUES (?, ?, ?, ?, ?, ?, ?)',
          ['_jukebox_log', 'read', 'DELETE FROM accounts', '[]', 0, '["accounts"]', 'select', null],
        ),
      object: '_jukebox_log',
    },
    {
      name: 'an identifier binding reading the booth log',
      run: (b) => q(b, 'SELECT * FROM ??', ['_jukebox_log']),
      object: '_jukebox_log',
    },
    {
      name: 'an identifier binding planting a step checkpoint',
      run: (b) =>
        q(b, 'INSERT INTO ?? (id, attempt, result) VALUES (?, ?, ?)', ['_jukebox_steps', 'x', 1, '{}']),
      object: '_jukebox_steps',
    },
    {
      name: 'an identifier binding erasing the row tracking',
      run: (b) => q(b, 'DELETE FROM ??', ['_jukebox_written']),
      object: '_jukebox_written',
    },
    {
      name: 'a quoted name of the booth log built from parts',
      run: (b) => q(b, 'DELETE FROM "_jukebox_""log"'),
      object: '_jukebox_',
    },
  ];
  const sqliteOnly: Attack[] = [
    {
      name: 'a view over the booth log, made with an identifier binding',
      run: (b) => q(b, 'CREATE VIEW peek_log AS SELECT * FROM ??', ['_jukebox_log']),
      object: '_jukebox_log',
    },
    {
      name: 'a trigger of the real database that writes the booth log (refused as compiled, not by the lexer)',
      run: (b) => q(b, 'INSERT INTO ledger (x) VALUES (1)'),
      object: '_jukebox_log',
    },
    {
      name: 'a view of the real database over the booth log (refused as compiled, not by the lexer)',
      run: (b) => q(b, 'SELECT * FROM peek'),
      object: '_jukebox_log',
    },
    {
      name: 'a temporary trigger on the booth connection',
      run: (b) => q(b, 'CREATE TEMP TRIGGER t AFTER INSERT ON accounts BEGIN SELECT 1; END'),
      object: 't',
    },
    {
      name: 'a quoted call of load_extension',
      run: (b) => q(b, `SELECT "load_extension"('${path.join(base, 'x.so')}')`),
      object: 'load_extension',
    },
  ];
  const pgOnly: Attack[] = [
    {
      name: 'an identifier binding naming the real table',
      run: (b) => q(b, 'UPDATE ?? SET balance = 0', ['public.accounts']),
      object: 'public',
    },
    {
      name: 'a U& escaped identifier naming the real schema',
      run: (b) => q(b, 'UPDATE U&"\\0070ublic".accounts SET balance = 0'),
      object: 'public',
    },
    {
      name: 'a U& identifier with its own escape character',
      run: (b) => q(b, `UPDATE U&"!0070ublic" UESCAPE '!' .accounts SET balance = 0`),
      object: 'public',
    },
    {
      name: 'a quoted set_config that moves the search path to the real schema',
      run: async (b) => {
        await q(b, `SELECT "set_config"('search_path', 'public', false)`);
        return q(b, 'UPDATE accounts SET balance = 0');
      },
      object: 'set_config',
    },
    {
      name: 'a quoted call of pg_read_file',
      run: (b) => q(b, `SELECT "pg_read_file"('${secretFile()}')`),
      object: 'pg_read_file',
    },
    {
      name: 'a quoted, schema-qualified call of pg_ls_dir',
      run: (b) => q(b, `SELECT "pg_catalog"."pg_ls_dir"('.')`),
      object: 'pg_ls_dir',
    },
    {
      name: 'an identifier binding reading another schema',
      run: (b) => q(b, 'SELECT * FROM ??', ['other.secrets']),
      object: 'other',
    },
    {
      name: 'a catalog the agent role may not read (refused by the database, not the lexer)',
      run: (b) => q(b, 'SELECT rolpassword FROM pg_catalog.pg_authid'),
      object: 'pg_authid',
    },
    {
      name: 'a server function the lexer does not list (refused by the database)',
      run: (b) => q(b, 'SELECT * FROM pg_catalog.pg_ls_logicalsnapdir()'),
      object: 'pg_ls_logicalsnapdir',
    },
  ];
  const attacks = [...common, ...(kind === 'pg' ? pgOnly : sqliteOnly)];

  it.each(attacks.map((a) => [a.name, a] as const))(
    '%s is refused and changes nothing',
    async (_n, attack) => {
      await attempt(w, attack);
    },
  );

  it('staged statements run confined: the database says where they may go', async () => {
    const booth = await w.runtime.open('wf', `run-${++runs}`);
    try {
      const sql = await booth.sql();
      if (kind === 'pg') {
        const who = (await sql.query('SELECT current_user AS u, session_user AS s')).rows[0] as {
          u: string;
          s: string;
        };
        expect(who.u).toMatch(/^jbx_agent_[0-9a-f]+$/);
        expect(who.s).toBe(who.u);
        const rights = (
          await sql.query(
            "SELECT rolsuper, has_schema_privilege('public', 'USAGE') AS pub, has_table_privilege('public.accounts', 'SELECT') AS acc, has_schema_privilege('other', 'USAGE') AS oth, pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') AS files FROM pg_roles WHERE rolname = current_user",
          )
        ).rows[0];
        expect(rights).toEqual({ rolsuper: false, pub: true, acc: false, oth: false, files: false });
      }
      // The staged tables are reachable, the booth's are not, whatever the spelling.
      expect((await sql.query('SELECT count(*) AS n FROM accounts')).rows[0]).toEqual({
        n: kind === 'pg' ? '2' : 2,
      });
    } finally {
      await booth.discard();
      await booth.close();
    }
  });

  it('a statement that never ends is stopped at the statement time limit, staging nothing, and the connection goes on', async () => {
    const before = await w.realHash();
    const booth = await w.runtime.open('wf', `run-${++runs}`);
    try {
      const sql = await booth.sql();
      const loop =
        'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) AS c FROM n';
      const started = Date.now();
      const err = await sql.query(loop).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SqlStatementTimeoutError);
      expect((err as SqlStatementTimeoutError).timeoutMs).toBe(1_000);
      expect(Date.now() - started).toBeLessThan(30_000);
      await sql.query('UPDATE accounts SET balance = 7 WHERE owner = ?', ['ann']);
      const ws = await sql.writeSet();
      expect(ws.statements.map((s) => s.statement)).toEqual([
        'UPDATE accounts SET balance = 7 WHERE owner = ?',
      ]);
      expect(await w.realHash()).toBe(before);
      await booth.discard();
      expect(await w.realHash()).toBe(before);
    } finally {
      await booth.close();
    }
  });

  it('inside a tool step, a stopped statement fails the step where SQLite rolled its transaction back', async () => {
    const before = await w.realHash();
    const run = `run-${++runs}`;
    const opened = await w.runtime.openStep('wf', run, { id: 'step-1', attempt: 1 });
    const booth = opened.booth;
    try {
      const sql = await booth.sql();
      await sql.query('UPDATE accounts SET balance = 5 WHERE owner = ?', ['ann']);
      const loop =
        'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) AS c FROM n';
      const err = (await sql.query(loop).catch((e: unknown) => e)) as SqlStatementTimeoutError;
      expect(err).toBeInstanceOf(SqlStatementTimeoutError);
      if (kind === 'sqlite3') {
        // SQLite's interrupt may take the whole transaction with it: the step can stage nothing more.
        expect(err.stepLost).toBe(true);
        await expect(sql.query('SELECT 1 AS x')).rejects.toBe(err);
        await expect(booth.completeStep('done')).rejects.toBe(err);
      } else {
        // PostgreSQL cancels the statement's savepoint only: the step's earlier statement stays staged.
        expect(err.stepLost).toBe(false);
        expect((await sql.query('SELECT balance FROM accounts WHERE owner = ?', ['ann'])).rows).toEqual([
          { balance: 5 },
        ]);
        expect(await booth.completeStep('done')).toBe(true);
      }
      expect(await w.realHash()).toBe(before);
    } finally {
      await booth.close();
    }
    const rollback = await w.runtime.open('wf', run);
    await rollback.discard();
    await rollback.close();
    expect(await w.realHash()).toBe(before);
  });

  it('commit re-checks every logged statement: a log row planted from outside is refused, nothing applied', async () => {
    const before = await w.realHash();
    const run = `run-${++runs}`;
    const booth = await w.runtime.open('wf', run);
    try {
      const sql = await booth.sql();
      await sql.query('UPDATE accounts SET balance = 1 WHERE owner = ?', ['ann']);
      // Someone with the file or the server's superuser writes the booth's log behind its back.
      const planted =
        kind === 'pg' ? 'DELETE FROM public.accounts' : "ATTACH DATABASE 'elsewhere.sqlite' AS stolen";
      await plantLogRow(w, booth, planted);
      const err = await booth.commitSql().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SqlTamperedError);
      expect((err as Error).message).toContain(kind === 'pg' ? 'public' : 'ATTACH');
      expect(await w.realHash()).toBe(before);
      await booth.discard();
      expect(await w.realHash()).toBe(before);
    } finally {
      await booth.close();
    }
  });

  it('leaves no role, schema or shadow behind when runs end', async () => {
    const booth = await w.runtime.open('wf', `run-${++runs}`);
    await (await booth.sql()).query('UPDATE accounts SET balance = 3 WHERE owner = ?', ['bob']);
    await booth.discard();
    await booth.close();
    if (kind === 'pg') {
      // Earlier tests of this file each ended their run too.
      const roles = (await w.admin.raw("SELECT rolname FROM pg_roles WHERE rolname LIKE 'jbx\\_%'")).rows;
      const schemas = (await w.admin.raw("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'jbx\\_%'"))
        .rows;
      expect({ roles, schemas }).toEqual({ roles: [], schemas: [] });
    }
  });
});

/** Writes a row into a session's statement log with the rights of whoever owns the files or the server. */
async function plantLogRow(w: World, booth: ShadowBooth, statement: string): Promise<void> {
  const state = JSON.parse(fs.readFileSync(path.join(booth.dir, 'sql', 'sql-state.json'), 'utf8'));
  const shadow: string = state.session.shadow;
  const row = [
    'write',
    statement,
    '[]',
    0,
    JSON.stringify(['accounts']),
    statement.split(' ')[0]!.toLowerCase(),
    null,
  ];
  const cols = '(kind, statement, params, rows_affected, names, verb, result) VALUES (?, ?, ?, ?, ?, ?, ?)';
  if (w.name === 'pg') {
    await w.admin.raw(
      `INSERT INTO "${shadow.replace('jbx_shadow_', 'jbx_booth_')}"._jukebox_log ${cols}`,
      row,
    );
  } else {
    const k = knexFactory({ client: 'sqlite3', connection: { filename: shadow }, useNullAsDefault: true });
    try {
      await k.raw(`INSERT INTO _jukebox_log ${cols}`, row);
    } finally {
      await k.destroy();
    }
  }
}
