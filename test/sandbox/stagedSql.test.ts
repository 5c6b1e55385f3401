import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityTape, Redactor, TapeStore } from '../../recorder';
import { runWithActivityTape } from '../../recorder/activityTape';
import {
  SqlCompensationError,
  SqlConflictError,
  SqlRefusedError,
  SqlReplayDivergedError,
  SqlStatementError,
  StagedSql,
  type StagedSqlOptions,
} from '../../sandbox/sql';
import { readTape } from '../../tape';
import { type PostgresCluster, startPostgres } from '../support/postgres';

type Backend = {
  name: 'sqlite3' | 'pg';
  /** A fresh real database with table `accounts(id, owner, balance)` (3 rows) and `audit(note)`. */
  fresh(): Promise<{
    real: Knex;
    options: (stagingDir: string) => StagedSqlOptions;
    cleanup(): Promise<void>;
  }>;
};

let base: string;
let pg: PostgresCluster;
let dbCounter = 0;

beforeAll(async () => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-sql-'));
  pg = await startPostgres();
});
afterAll(async () => {
  await pg?.stop();
  fs.rmSync(base, { recursive: true, force: true });
});

async function seed(db: Knex, serial: string): Promise<void> {
  await db.raw(
    `CREATE TABLE accounts (id ${serial} PRIMARY KEY, owner TEXT NOT NULL UNIQUE, balance INTEGER NOT NULL)`,
  );
  await db.raw('CREATE TABLE audit (note TEXT)');
  await db.raw("INSERT INTO accounts (owner, balance) VALUES ('ann', 100), ('bob', 50), ('cy', 0)");
}

const backends: Backend[] = [
  {
    name: 'sqlite3',
    async fresh() {
      const file = path.join(base, `real-${++dbCounter}.sqlite`);
      const real = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
      await seed(real, 'INTEGER');
      return {
        real,
        options: (stagingDir) => ({ client: 'sqlite3', connection: { filename: file }, stagingDir }),
        cleanup: () => real.destroy(),
      };
    },
  },
  {
    name: 'pg',
    async fresh() {
      const admin = knexFactory({ client: 'pg', connection: pg.url });
      const name = `db${++dbCounter}`;
      await admin.raw(`CREATE DATABASE ${name}`);
      await admin.destroy();
      const connection = { host: pg.host, port: pg.port, user: pg.user, database: name };
      const real = knexFactory({ client: 'pg', connection });
      await seed(real, 'SERIAL');
      return {
        real,
        options: (stagingDir) => ({ client: 'pg', connection, stagingDir }),
        cleanup: () => real.destroy(),
      };
    },
  },
];

async function rows(db: Knex, sql: string): Promise<Record<string, unknown>[]> {
  const r = await db.raw(sql);
  return (Array.isArray(r) ? r : r.rows).map((x: Record<string, unknown>) => ({ ...x }));
}

const balances = (db: Knex) => rows(db, 'SELECT owner, balance FROM accounts ORDER BY owner');
const num = (v: unknown) => Number(v);

describe.each(backends)('StagedSql on $name', (backend) => {
  let n = 0;
  const staging = () => path.join(base, `${backend.name}-staging-${++n}`);

  it('stages writes on the shadow: reads see them, the real database does not', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      const before = await balances(db.real);
      const u = await sql.query('UPDATE accounts SET balance = balance - ? WHERE owner = ?', [30, 'ann']);
      expect(u.rowsAffected).toBe(1);
      const i = await sql.query('INSERT INTO accounts (owner, balance) VALUES (?, ?)', ['dee', 30]);
      expect(i.rowsAffected).toBe(1);
      const seen = await sql.query('SELECT owner, balance FROM accounts ORDER BY owner');
      expect(seen.rows.map((r) => [r.owner, num(r.balance)])).toEqual([
        ['ann', 70],
        ['bob', 50],
        ['cy', 0],
        ['dee', 30],
      ]);
      expect(await balances(db.real)).toEqual(before);
      const ws = await sql.writeSet();
      expect(ws.statements.map((s) => s.statement)).toEqual([
        'UPDATE accounts SET balance = balance - ? WHERE owner = ?',
        'INSERT INTO accounts (owner, balance) VALUES (?, ?)',
      ]);
      expect(ws.statements[0]!.params).toEqual([30, 'ann']);
      expect(ws.tables).toEqual([{ name: 'accounts', rowsBefore: 3, rowsAfter: 4 }]);
      expect(ws.rowsAffected).toBe(2);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('commits the write set in one transaction and a retry after a crash does not apply it twice', async () => {
    const db = await backend.fresh();
    const dir = staging();
    const crashing = await StagedSql.open({
      ...db.options(dir),
      faultPoint: (name) => {
        if (name === 'commit:applied') throw new Error('simulated crash after the real transaction');
      },
    });
    await crashing.query("UPDATE accounts SET balance = balance + 5 WHERE owner = 'bob'");
    await crashing.query("INSERT INTO audit (note) VALUES ('bonus')");
    await expect(crashing.commit()).rejects.toThrow('simulated crash');
    await crashing.close();
    expect((await balances(db.real)).find((r) => r.owner === 'bob')!.balance).toBe(55);

    const again = await StagedSql.open(db.options(dir));
    try {
      const result = await again.commit();
      expect(result).toMatchObject({ applied: true, recovered: true, statements: 2, rowsAffected: 2 });
      expect(result.tables).toEqual(['accounts', 'audit']);
      expect((await balances(db.real)).find((r) => r.owner === 'bob')!.balance).toBe(55);
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'bonus' }]);
      // After commit the instance starts over from the new real state.
      expect((await again.writeSet()).statements).toEqual([]);
      const seen = await again.query("SELECT balance FROM accounts WHERE owner = 'bob'");
      expect(num(seen.rows[0]!.balance)).toBe(55);
    } finally {
      await again.close();
      await db.cleanup();
    }
  });

  it('aborts the commit with nothing applied when a table the run read changed underneath it', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("SELECT balance FROM accounts WHERE owner = 'ann'");
      await sql.query("INSERT INTO audit (note) VALUES ('ann checked')");
      await db.real.raw("UPDATE accounts SET balance = 1 WHERE owner = 'cy'");
      const realBefore = [await balances(db.real), await rows(db.real, 'SELECT note FROM audit')];
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.code).toBe('SQL_CONFLICT');
      expect(err.tables).toEqual(['accounts']);
      expect(err.nonRetryable).toBe(true);
      expect([await balances(db.real), await rows(db.real, 'SELECT note FROM audit')]).toEqual(realBefore);
      // Still staged: the caller decides to discard.
      expect((await sql.writeSet()).statements).toHaveLength(1);
      await sql.discard();
      expect((await sql.writeSet()).statements).toHaveLength(0);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('commits when only tables the run never touched changed', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("INSERT INTO audit (note) VALUES ('x')");
      await db.real.raw("UPDATE accounts SET balance = 7 WHERE owner = 'cy'");
      const r = await sql.commit();
      expect(r).toMatchObject({ applied: true, tables: ['audit'] });
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'x' }]);
      expect((await balances(db.real)).find((x) => x.owner === 'cy')!.balance).toBe(7);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('compensates an applied commit, once, and refuses when the tables changed since', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      const before = await balances(db.real);
      await sql.query("UPDATE accounts SET balance = 0 WHERE owner = 'ann'");
      await sql.query("DELETE FROM accounts WHERE owner = 'bob'");
      await sql.query('CREATE TABLE notes (body TEXT)');
      await sql.query("INSERT INTO notes (body) VALUES ('n1')");
      const result = await sql.commit();
      expect(result).toMatchObject({ applied: true, undoable: true });
      expect(await balances(db.real)).not.toEqual(before);
      const undone = await sql.compensate(result);
      expect(undone).toMatchObject({ recovered: false });
      expect(undone.tables).toEqual(['accounts', 'notes']);
      expect(await balances(db.real)).toEqual(before);
      await expect(rows(db.real, 'SELECT * FROM notes')).rejects.toThrow();
      expect(await sql.compensate(result)).toMatchObject({ recovered: true });

      await sql.query("UPDATE accounts SET balance = 1 WHERE owner = 'cy'");
      const second = await sql.commit();
      await db.real.raw("UPDATE accounts SET balance = 99 WHERE owner = 'ann'");
      const err = await sql.compensate(second).catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect((await balances(db.real)).find((x) => x.owner === 'cy')!.balance).toBe(1);
      const fake = { ...second, commitId: 'feedfacefeedface' };
      await expect(sql.compensate(fake)).rejects.toBeInstanceOf(SqlCompensationError);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('discard leaves the real database untouched and the next query starts from a fresh snapshot', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      const before = await balances(db.real);
      await sql.query('DELETE FROM accounts');
      expect((await sql.query('SELECT count(*) AS n FROM accounts')).rows[0]!.n).toBe(
        backend.name === 'pg' ? '0' : 0,
      );
      await sql.discard();
      expect(await balances(db.real)).toEqual(before);
      await db.real.raw("INSERT INTO accounts (owner, balance) VALUES ('eve', 1)");
      const seen = await sql.query('SELECT owner FROM accounts ORDER BY owner');
      expect(seen.rows.map((r) => r.owner)).toEqual(['ann', 'bob', 'cy', 'eve']);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('survives a restart: a new object on the same stagingDir continues the staged state', async () => {
    const db = await backend.fresh();
    const dir = staging();
    const first = await StagedSql.open(db.options(dir));
    await first.query("UPDATE accounts SET balance = 1000 WHERE owner = 'cy'");
    const sessionId = first.sessionId;
    await first.close();
    const second = await StagedSql.open(db.options(dir));
    try {
      expect(second.sessionId).toBe(sessionId);
      const seen = await second.query("SELECT balance FROM accounts WHERE owner = 'cy'");
      expect(num(seen.rows[0]!.balance)).toBe(1000);
      expect((await second.writeSet()).statements).toHaveLength(1);
      expect((await balances(db.real)).find((x) => x.owner === 'cy')!.balance).toBe(0);
      await second.commit();
      expect((await balances(db.real)).find((x) => x.owner === 'cy')!.balance).toBe(1000);
    } finally {
      await second.close();
      await db.cleanup();
    }
  });

  it('refuses statements that would leave the shadow, and a failing statement stages nothing', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    const outsideFile = path.join(base, `outside-${backend.name}.db`);
    const refused =
      backend.name === 'sqlite3'
        ? [
            `ATTACH DATABASE '${outsideFile}' AS other`,
            'DETACH DATABASE other',
            `VACUUM INTO '${outsideFile}'`,
            "SELECT load_extension('/tmp/evil.so')",
            'PRAGMA journal_mode = DELETE',
            'PRAGMA writable_schema = 1',
            'BEGIN',
            "UPDATE accounts SET balance = 0; ATTACH 'x' AS y",
            'DELETE FROM _jukebox_log',
          ]
        : [
            "COPY accounts TO '/tmp/leak.csv'",
            "SELECT pg_read_file('/etc/passwd')",
            'SET search_path TO public',
            'UPDATE public.accounts SET balance = 0',
            'DO $$ BEGIN PERFORM 1; END $$',
            'CREATE EXTENSION dblink',
            'COMMIT',
            "SELECT lo_import('/etc/passwd')",
          ];
    try {
      for (const stmt of refused) {
        const err = await sql.query(stmt).catch((e) => e);
        expect(err, stmt).toBeInstanceOf(SqlRefusedError);
        expect(err.code).toBe('SQL_REFUSED');
        expect(err.nonRetryable).toBe(true);
      }
      // Refused words inside strings, comments or as column aliases are ordinary SQL.
      const allowed = [
        "SELECT 'ATTACH DATABASE x; VACUUM' AS note",
        'SELECT a.owner AS attach_note FROM accounts a -- ATTACH here is a comment',
        'WITH x AS (SELECT owner FROM accounts) SELECT count(*) AS n FROM x',
        backend.name === 'pg' ? "SELECT 'public.accounts' AS s" : 'PRAGMA table_info(accounts)',
      ];
      for (const stmt of allowed) await expect(sql.query(stmt), stmt).resolves.toBeDefined();
      const bad = await sql.query("INSERT INTO accounts (owner, balance) VALUES ('ann', 1)").catch((e) => e);
      expect(bad).toBeInstanceOf(SqlStatementError);
      expect((await sql.writeSet()).statements).toHaveLength(0);
      expect(fs.existsSync(outsideFile)).toBe(false);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('aborts a commit whose replay would not reproduce the shadow (non-deterministic write)', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query(
        `INSERT INTO audit (note) VALUES (${backend.name === 'pg' ? 'random()::text' : 'random()'})`,
      );
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlReplayDivergedError);
      expect(err.tables).toEqual(['audit']);
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('records each statement as a sql.mutation frame, and replaying the frames rebuilds the staged state', async () => {
    const db = await backend.fresh();
    const tapeDir = path.join(base, `tapes-${backend.name}-${++n}`);
    const store = new TapeStore({ dir: tapeDir, fsync: 'none' });
    const run = {
      workflowId: 'wf',
      runId: `run-${n}`,
      workflowType: 'sqlTest',
      taskQueue: 'q',
      agentCodeHash: 'h',
    };
    const tape = new ActivityTape(
      { store, redactor: new Redactor({ env: {} }), costOf: () => null, nowUs: () => Date.now() * 1000 },
      run,
      { workflowId: 'wf', runId: run.runId, activityId: '1', attempt: 1 },
      'toolStep',
      1,
    );
    const sql = await StagedSql.open(db.options(staging()));
    const fork = await StagedSql.open(db.options(staging()));
    try {
      await runWithActivityTape(tape, async () => {
        await sql.query("UPDATE accounts SET balance = balance * 2 WHERE owner <> 'cy'");
        await sql.query('INSERT INTO audit (note) VALUES (?)', ['doubled']);
        await sql.query('SELECT * FROM audit');
      });
      await tape.flush('test');
      await store.close?.();
      const frames = readTape(fs.readFileSync(store.pathFor('wf', run.runId))).frames.filter(
        (f) => f.kind === 'sql.mutation',
      );
      const payloads = frames.map((f) => f.payload as Record<string, unknown>);
      expect(payloads.map((p) => [p.statement, p.kind, p.rowsAffected])).toEqual([
        ["UPDATE accounts SET balance = balance * 2 WHERE owner <> 'cy'", 'write', 2],
        ['INSERT INTO audit (note) VALUES (?)', 'write', 1],
        ['SELECT * FROM audit', 'read', 0],
      ]);
      expect(payloads[1]!.params).toEqual(['doubled']);
      expect(payloads[0]!.base).toBe(fork.baseHash);
      await fork.replay(payloads as { statement: string; params: never }[]);
      expect((await fork.writeSet()).tables).toEqual((await sql.writeSet()).tables);
      expect((await fork.query('SELECT owner, balance FROM accounts ORDER BY owner')).rows).toEqual(
        (await sql.query('SELECT owner, balance FROM accounts ORDER BY owner')).rows,
      );
    } finally {
      await sql.close();
      await fork.close();
      await db.cleanup();
    }
  });
});
