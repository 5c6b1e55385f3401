import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SqlCompensationError,
  SqlConflictError,
  SqlRefusedError,
  SqlReplayDivergedError,
  SqlStatementError,
  StagedSql,
  type StagedSqlOptions,
} from '../../src/booth/sql';
import { ActivityTape, Redactor, TapeStore } from '../../src/recorder';
import { runWithActivityTape } from '../../src/recorder/activityTape';
import { readTape } from '../../src/recorder/tape';
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

  it('an applied commit ends its session without rewriting the state file: the commit table records the end, and the next open reads it there', async () => {
    const db = await backend.fresh();
    const dir = staging();
    const stateFile = path.join(dir, 'sql-state.json');
    const shadowGone = async (shadow: string) =>
      backend.name === 'sqlite3'
        ? !fs.existsSync(shadow)
        : (await rows(db.real, `SELECT nspname FROM pg_namespace WHERE nspname = '${shadow}'`)).length === 0;
    const first = await StagedSql.open(db.options(dir));
    const staged = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
    await first.query("INSERT INTO audit (note) VALUES ('ended by its commit')");
    const applied = await first.commit();
    expect(applied).toMatchObject({ applied: true, recovered: false, commitId: staged.session.id });
    expect(first.sessionId).toBeNull();
    // On disk the state still names the committed session; its shadow is gone.
    expect(JSON.parse(fs.readFileSync(stateFile, 'utf8'))).toEqual(staged);
    expect(await shadowGone(staged.session.shadow)).toBe(true);
    await first.close();
    const next = await StagedSql.open(db.options(dir));
    try {
      // Open found the end in the real database and started the next session, whose state carries the commit.
      expect(next.sessionId).not.toBeNull();
      expect(next.sessionId).not.toBe(staged.session.id);
      const written = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
      expect(written.session.id).toBe(next.sessionId);
      expect(written.lastCommit).toEqual(applied);
      expect(await next.commit()).toEqual({ ...applied, recovered: true });
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'ended by its commit' }]);
    } finally {
      await next.close();
    }

    // A discard (no commit row records it) still writes the state before the shadow goes.
    const dirDropped = staging();
    const dropped = await StagedSql.open(db.options(dirDropped));
    try {
      await dropped.query("INSERT INTO audit (note) VALUES ('discarded')");
      await dropped.discard();
      expect(JSON.parse(fs.readFileSync(path.join(dirDropped, 'sql-state.json'), 'utf8')).session).toBeNull();
    } finally {
      await dropped.close();
      await db.cleanup();
    }
  });

  it('a commit table dropped since an earlier commit of this process is made again, and the next commit applies', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("INSERT INTO audit (note) VALUES ('first')");
      expect((await sql.commit()).applied).toBe(true);
      await db.real.raw('DROP TABLE _jukebox_commits');
      await sql.query("INSERT INTO audit (note) VALUES ('second')");
      const second = await sql.commit();
      expect(second).toMatchObject({ applied: true, recovered: false, statements: 1 });
      expect(await rows(db.real, 'SELECT note FROM audit ORDER BY note')).toEqual([
        { note: 'first' },
        { note: 'second' },
      ]);
      expect(await rows(db.real, 'SELECT id FROM _jukebox_commits')).toEqual([{ id: second.commitId }]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('a commit whose caller never heard back is reported on retry and undone without its result', async () => {
    const db = await backend.fresh();
    const before = [await balances(db.real), await rows(db.real, 'SELECT note FROM audit')];
    // Crashed after the real transaction, session still open: found through the real commit table.
    const dirOpen = staging();
    const crashing = await StagedSql.open({
      ...db.options(dirOpen),
      faultPoint: (name) => {
        if (name === 'commit:applied') throw new Error('simulated crash after the real transaction');
      },
    });
    await crashing.query("UPDATE accounts SET balance = balance + 5 WHERE owner = 'bob'");
    await expect(crashing.commit()).rejects.toThrow('simulated crash');
    await crashing.close();
    const afterOpen = await StagedSql.open(db.options(dirOpen));
    try {
      expect((await balances(db.real)).find((r) => r.owner === 'bob')!.balance).toBe(55);
      const undone = await afterOpen.compensateApplied();
      expect(undone).toMatchObject({ recovered: false, tables: ['accounts'] });
      expect([await balances(db.real), await rows(db.real, 'SELECT note FROM audit')]).toEqual(before);
      // The session is over: discarding refuses nothing, and a second undo finds nothing left to do.
      await afterOpen.discard();
      expect(await afterOpen.compensateApplied()).toBeNull();
    } finally {
      await afterOpen.close();
    }

    // Crashed after the session ended (the result was lost on the way back): a retried commit() still says
    // it applied, so a saga registers the compensation, and compensateApplied() undoes it from the staging dir.
    const dirEnded = staging();
    const first = await StagedSql.open(db.options(dirEnded));
    await first.query("INSERT INTO audit (note) VALUES ('lost result')");
    expect((await first.commit()).applied).toBe(true);
    await first.close();
    const retry = await StagedSql.open(db.options(dirEnded));
    try {
      const again = await retry.commit();
      expect(again).toMatchObject({ applied: true, recovered: true, statements: 1 });
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'lost result' }]);
      expect(await retry.compensateApplied()).toMatchObject({ recovered: false });
      expect([await balances(db.real), await rows(db.real, 'SELECT note FROM audit')]).toEqual(before);
      expect(await retry.compensateApplied()).toMatchObject({ recovered: true });
    } finally {
      await retry.close();
    }

    // Never applied: nothing to undo, nothing touched.
    const dirNever = staging();
    const never = await StagedSql.open(db.options(dirNever));
    try {
      await never.query("DELETE FROM accounts WHERE owner = 'ann'");
      expect(await never.compensateApplied()).toBeNull();
      expect([await balances(db.real), await rows(db.real, 'SELECT note FROM audit')]).toEqual(before);
      expect((await never.writeSet()).statements).toHaveLength(1);
    } finally {
      await never.close();
      await db.cleanup();
    }
  });

  it('aborts the commit with nothing applied when a row the run read changed underneath it', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("SELECT balance FROM accounts WHERE owner = 'ann'");
      await sql.query("INSERT INTO audit (note) VALUES ('ann checked')");
      await db.real.raw("UPDATE accounts SET balance = 1 WHERE owner = 'ann'");
      const realBefore = [await balances(db.real), await rows(db.real, 'SELECT note FROM audit')];
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.code).toBe('SQL_CONFLICT');
      expect(err.tables).toEqual(['accounts']);
      expect(err.statement).toBe("SELECT balance FROM accounts WHERE owner = 'ann'");
      expect(err.message).toContain('re-run the agent');
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

  it('commits when a row of a table the run read changed, but not a row the read returned', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("SELECT balance FROM accounts WHERE owner = 'ann'");
      await sql.query("INSERT INTO audit (note) VALUES ('ann checked')");
      await db.real.raw("UPDATE accounts SET balance = 1 WHERE owner = 'cy'");
      const r = await sql.commit();
      expect(r).toMatchObject({ applied: true, tables: ['accounts', 'audit'] });
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'ann checked' }]);
      expect((await balances(db.real)).find((x) => x.owner === 'cy')!.balance).toBe(1);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('aborts when a phantom row appears in a range the run read', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      const read = 'SELECT owner FROM accounts WHERE balance >= ?';
      expect((await sql.query(read, [50])).rows).toHaveLength(2);
      await sql.query("INSERT INTO audit (note) VALUES ('two rich accounts')");
      await db.real.raw("INSERT INTO accounts (owner, balance) VALUES ('eve', 70)");
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.statement).toBe(read);
      expect(err.tables).toEqual(['accounts']);
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('aborts when a write would now change rows its WHERE did not match on the snapshot', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      const write = 'UPDATE accounts SET balance = 0 WHERE balance >= 50';
      expect((await sql.query(write)).rowsAffected).toBe(2);
      await db.real.raw("UPDATE accounts SET balance = 60 WHERE owner = 'cy'");
      const realBefore = await balances(db.real);
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.statement).toBe(write);
      expect(err.message).toContain('would change 3 row(s)');
      expect(await balances(db.real)).toEqual(realBefore);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('commits when another row of a table the run wrote changed concurrently', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("UPDATE accounts SET balance = balance - 30 WHERE owner = 'ann'");
      await sql.query("DELETE FROM accounts WHERE owner = 'bob'");
      await db.real.raw("UPDATE accounts SET balance = 7 WHERE owner = 'cy'");
      const r = await sql.commit();
      expect(r).toMatchObject({ applied: true, tables: ['accounts'] });
      expect(await balances(db.real)).toEqual([
        { owner: 'ann', balance: 70 },
        { owner: 'cy', balance: 7 },
      ]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('commits when a concurrent insert lands in a table the run wrote', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("UPDATE accounts SET balance = balance + 1 WHERE owner = 'bob'");
      await db.real.raw("INSERT INTO accounts (owner, balance) VALUES ('eve', 5)");
      await sql.commit();
      expect(await balances(db.real)).toEqual([
        { owner: 'ann', balance: 100 },
        { owner: 'bob', balance: 51 },
        { owner: 'cy', balance: 0 },
        { owner: 'eve', balance: 5 },
      ]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('aborts with nothing applied when a row the run updated, deleted or created changed underneath it, naming table and key', async () => {
    const cases: { stage: string[]; concurrent: string; key: string }[] = [
      {
        stage: ["UPDATE accounts SET balance = balance - 30 WHERE owner = 'ann'"],
        concurrent: "UPDATE accounts SET balance = 90 WHERE owner = 'ann'",
        key: 'id=1',
      },
      {
        stage: ["DELETE FROM accounts WHERE owner = 'bob'"],
        concurrent: "UPDATE accounts SET owner = 'robert' WHERE owner = 'bob'",
        key: 'id=2',
      },
      {
        stage: ["INSERT INTO accounts (id, owner, balance) VALUES (10, 'dee', 1)"],
        concurrent: "INSERT INTO accounts (id, owner, balance) VALUES (10, 'zed', 2)",
        key: 'id=10',
      },
    ];
    for (const c of cases) {
      const db = await backend.fresh();
      const sql = await StagedSql.open(db.options(staging()));
      try {
        for (const stmt of c.stage) await sql.query(stmt);
        await sql.query("INSERT INTO audit (note) VALUES ('x')");
        await db.real.raw(c.concurrent);
        const realBefore = [await balances(db.real), await rows(db.real, 'SELECT note FROM audit')];
        const err = await sql.commit().catch((e) => e);
        expect(err, c.concurrent).toBeInstanceOf(SqlConflictError);
        expect(err.tables).toEqual(['accounts']);
        expect(err.rows).toEqual([{ table: 'accounts', key: c.key }]);
        expect(err.message).toContain(`accounts (${c.key})`);
        expect([await balances(db.real), await rows(db.real, 'SELECT note FROM audit')]).toEqual(realBefore);
      } finally {
        await sql.close();
        await db.cleanup();
      }
    }
  });

  it('checks every row of a commit writing hundreds of rows: one changed underneath past the first few hundred aborts it, and the same commit applies every row otherwise', async () => {
    for (const concurrent of [true, false]) {
      const db = await backend.fresh();
      const sql = await StagedSql.open(db.options(staging()));
      try {
        for (let i = 0; i < 450; i++)
          await sql.query('INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)', [
            100 + i,
            `o${i}`,
            i,
          ]);
        if (concurrent) await db.real.raw("INSERT INTO accounts (id, owner, balance) VALUES (520, 'zed', 2)");
        const before = await balances(db.real);
        if (concurrent) {
          const err = await sql.commit().catch((e) => e);
          expect(err).toBeInstanceOf(SqlConflictError);
          expect(err.rows).toEqual([{ table: 'accounts', key: 'id=520' }]);
          expect(await balances(db.real)).toEqual(before);
          continue;
        }
        const result = await sql.commit();
        expect(result).toMatchObject({ applied: true, statements: 450, rowsAffected: 450 });
        const real = await rows(
          db.real,
          'SELECT id, owner, balance FROM accounts WHERE id >= 100 ORDER BY id',
        );
        expect(real.map((r) => [num(r.id), r.owner, num(r.balance)])).toEqual(
          Array.from({ length: 450 }, (_, i) => [100 + i, `o${i}`, i]),
        );
        await sql.compensate(result);
        expect(await rows(db.real, 'SELECT id FROM accounts WHERE id >= 100')).toEqual([]);
      } finally {
        await sql.close();
        await db.cleanup();
      }
    }
  });

  it('a table without a primary key still gets the whole-table check', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("INSERT INTO audit (note) VALUES ('mine')");
      await db.real.raw("INSERT INTO audit (note) VALUES ('theirs')");
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.tables).toEqual(['audit']);
      expect(err.wholeTables).toEqual(['audit']);
      expect(err.rows).toEqual([]);
      expect(err.message).toContain('no primary key');
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'theirs' }]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('tracks rows by a BLOB primary key and restores BLOB values on compensate', async () => {
    const db = await backend.fresh();
    const bytes = backend.name === 'pg' ? 'BYTEA' : 'BLOB';
    await db.real.raw(`CREATE TABLE blobs (k ${bytes} PRIMARY KEY, v ${bytes})`);
    const k1 = Buffer.from([0, 255, 39, 1]);
    const k2 = Buffer.from([7, 0]);
    await db.real.raw('INSERT INTO blobs (k, v) VALUES (?, ?), (?, ?)', [
      k1,
      Buffer.from('one'),
      k2,
      Buffer.from('two'),
    ]);
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query('UPDATE blobs SET v = ? WHERE k = ?', [Buffer.from([0, 1, 2]), k1]);
      // Another row of the same table changes concurrently: not a conflict.
      await db.real.raw('UPDATE blobs SET v = ? WHERE k = ?', [Buffer.from('2!'), k2]);
      const result = await sql.commit();
      const v = async (k: Buffer) =>
        Buffer.from(((await db.real('blobs').where({ k }).first()) as { v: Uint8Array }).v);
      expect(await v(k1)).toEqual(Buffer.from([0, 1, 2]));
      expect(await v(k2)).toEqual(Buffer.from('2!'));
      expect(await sql.compensate(result)).toMatchObject({ recovered: false, tables: ['blobs'] });
      expect(await v(k1)).toEqual(Buffer.from('one'));
      expect(await v(k2)).toEqual(Buffer.from('2!'));

      await sql.query('DELETE FROM blobs WHERE k = ?', [k2]);
      await db.real.raw('UPDATE blobs SET v = ? WHERE k = ?', [Buffer.from('2?'), k2]);
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.rows).toHaveLength(1);
      expect(err.rows[0].table).toBe('blobs');
      expect(err.rows[0].key).toMatch(/^k=/);
      expect(await v(k2)).toEqual(Buffer.from('2?'));
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('keeps the written rows across a restart: a row changed underneath is still caught', async () => {
    const db = await backend.fresh();
    const dir = staging();
    const first = await StagedSql.open(db.options(dir));
    await first.query("UPDATE accounts SET balance = 5 WHERE owner = 'ann'");
    await first.close();
    await db.real.raw("UPDATE accounts SET balance = 6 WHERE owner = 'ann'");
    const second = await StagedSql.open(db.options(dir));
    try {
      await second.query("UPDATE accounts SET balance = 5 WHERE owner = 'bob'");
      const err = await second.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.rows).toEqual([{ table: 'accounts', key: 'id=1' }]);
      expect(await balances(db.real)).toEqual([
        { owner: 'ann', balance: 6 },
        { owner: 'bob', balance: 50 },
        { owner: 'cy', balance: 0 },
      ]);
    } finally {
      await second.close();
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

  it('compensates an applied commit, once, and refuses when a row it wrote changed since', async () => {
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
      await db.real.raw("UPDATE accounts SET balance = 99 WHERE owner = 'cy'");
      const err = await sql.compensate(second).catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.rows).toEqual([{ table: 'accounts', key: 'id=3' }]);
      expect(err.message).toContain('nothing was undone');
      expect((await balances(db.real)).find((x) => x.owner === 'cy')!.balance).toBe(99);
      const fake = { ...second, commitId: 'feedfacefeedface' };
      await expect(sql.compensate(fake)).rejects.toBeInstanceOf(SqlCompensationError);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('compensate restores only the rows the commit wrote, keeping an unrelated row changed since', async () => {
    const db = await backend.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("UPDATE accounts SET balance = 0 WHERE owner = 'ann'");
      await sql.query("INSERT INTO accounts (owner, balance) VALUES ('dee', 4)");
      const result = await sql.commit();
      await db.real.raw("UPDATE accounts SET balance = 99 WHERE owner = 'bob'");
      await db.real.raw("INSERT INTO accounts (owner, balance) VALUES ('eve', 3)");
      expect(await sql.compensate(result)).toMatchObject({ recovered: false, tables: ['accounts'] });
      expect(await balances(db.real)).toEqual([
        { owner: 'ann', balance: 100 },
        { owner: 'bob', balance: 99 },
        { owner: 'cy', balance: 0 },
        { owner: 'eve', balance: 3 },
      ]);
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
      // Refused words inside strings, comments or as column aliases are ordinary SQL, and answer as such.
      const allowed: [string, Record<string, unknown>[]][] = [
        ["SELECT 'ATTACH DATABASE x; VACUUM' AS note", [{ note: 'ATTACH DATABASE x; VACUUM' }]],
        [
          'SELECT a.owner AS attach_note FROM accounts a ORDER BY a.owner -- ATTACH here is a comment',
          [{ attach_note: 'ann' }, { attach_note: 'bob' }, { attach_note: 'cy' }],
        ],
        [
          'WITH x AS (SELECT owner FROM accounts) SELECT count(*) AS n FROM x',
          // PostgreSQL's count is a bigint, which pg returns as a string.
          [{ n: backend.name === 'pg' ? '3' : 3 }],
        ],
        backend.name === 'pg'
          ? ["SELECT 'public.accounts' AS s", [{ s: 'public.accounts' }]]
          : [
              'PRAGMA table_info(accounts)',
              [
                { cid: 0, name: 'id', type: 'INTEGER', notnull: 0, dflt_value: null, pk: 1 },
                { cid: 1, name: 'owner', type: 'TEXT', notnull: 1, dflt_value: null, pk: 0 },
                { cid: 2, name: 'balance', type: 'INTEGER', notnull: 1, dflt_value: null, pk: 0 },
              ],
            ],
      ];
      for (const [stmt, expected] of allowed) {
        const r = await sql.query(stmt);
        expect(
          r.rows.map((row) => ({ ...row })),
          stmt,
        ).toEqual(expected);
      }
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
      await sql.discard();
      // The same on a row-tracked table: the row the replay wrote is not the shadow's.
      await sql.query(
        `UPDATE accounts SET owner = ${backend.name === 'pg' ? 'random()::text' : 'random()'} WHERE owner = 'cy'`,
      );
      const keyed = await sql.commit().catch((e) => e);
      expect(keyed).toBeInstanceOf(SqlReplayDivergedError);
      expect(keyed.tables).toEqual(['accounts']);
      expect((await balances(db.real)).map((x) => x.owner)).toEqual(['ann', 'bob', 'cy']);
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

describe('StagedSql pg shadow fidelity', () => {
  const pgBackend = backends.find((b) => b.name === 'pg')!;
  let n = 0;
  const staging = () => path.join(base, `pg-fidelity-${++n}`);

  async function withParentChild(): Promise<Awaited<ReturnType<Backend['fresh']>>> {
    const db = await pgBackend.fresh();
    await db.real.raw(
      'CREATE TABLE orders (id SERIAL PRIMARY KEY, account INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE, cents INTEGER NOT NULL, doubled INTEGER GENERATED ALWAYS AS (cents * 2) STORED)',
    );
    await db.real.raw('INSERT INTO orders (account, cents) VALUES (1, 10), (1, 11), (2, 20)');
    return db;
  }

  it('a staged insert violating a real foreign key fails at query time with SqlStatementError and stages nothing', async () => {
    const db = await withParentChild();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      const err = await sql
        .query('INSERT INTO orders (account, cents) VALUES (?, ?)', [42, 1])
        .catch((e) => e);
      expect(err).toBeInstanceOf(SqlStatementError);
      expect(err.message).toContain('foreign key');
      expect((await sql.writeSet()).statements).toEqual([]);
      // The reference points at the shadow's accounts: a staged account can take an order.
      await sql.query("INSERT INTO accounts (id, owner, balance) VALUES (7, 'gus', 0)");
      await sql.query('INSERT INTO orders (account, cents) VALUES (7, 5)');
      const seen = await sql.query('SELECT account, cents, doubled FROM orders WHERE account = 7');
      expect(seen.rows).toEqual([{ account: 7, cents: 5, doubled: 10 }]);
      expect(await rows(db.real, 'SELECT count(*)::int AS n FROM orders')).toEqual([{ n: 3 }]);
      await sql.commit();
      expect(await rows(db.real, 'SELECT account, cents, doubled FROM orders WHERE account = 7')).toEqual([
        { account: 7, cents: 5, doubled: 10 },
      ]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('a cascading delete is staged, committed, and a concurrent change to a cascaded row is a conflict', async () => {
    const db = await withParentChild();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query('DELETE FROM accounts WHERE id = 1');
      expect((await sql.query('SELECT id FROM orders ORDER BY id')).rows).toEqual([{ id: 3 }]);
      await db.real.raw('UPDATE orders SET cents = 99 WHERE id = 2');
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.rows).toEqual([{ table: 'orders', key: 'id=2' }]);
      expect(await rows(db.real, 'SELECT id FROM orders ORDER BY id')).toEqual([
        { id: 1 },
        { id: 2 },
        { id: 3 },
      ]);
      await sql.discard();
      await sql.query('DELETE FROM accounts WHERE id = 1');
      // An unrelated order changing is not a conflict.
      await db.real.raw('UPDATE orders SET cents = 21 WHERE id = 3');
      await sql.commit();
      expect(await rows(db.real, 'SELECT id, cents FROM orders ORDER BY id')).toEqual([{ id: 3, cents: 21 }]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('a view over a staged table sees the staged rows', async () => {
    const db = await pgBackend.fresh();
    await db.real.raw('CREATE VIEW rich AS SELECT owner FROM accounts WHERE balance >= 50');
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("UPDATE accounts SET balance = 80 WHERE owner = 'cy'");
      await sql.query("DELETE FROM accounts WHERE owner = 'bob'");
      const seen = await sql.query('SELECT owner FROM rich ORDER BY owner');
      expect(seen.rows.map((r) => r.owner)).toEqual(['ann', 'cy']);
      expect((await rows(db.real, 'SELECT owner FROM rich ORDER BY owner')).map((r) => r.owner)).toEqual([
        'ann',
        'bob',
      ]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('a user trigger fires on the shadow and the commit reproduces it on the real database', async () => {
    const db = await pgBackend.fresh();
    await db.real.raw(
      `CREATE FUNCTION log_balance() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO audit (note) VALUES (NEW.owner || ' now ' || NEW.balance); RETURN NEW; END $$`,
    );
    await db.real.raw(
      'CREATE TRIGGER balance_audit AFTER UPDATE OF balance ON accounts FOR EACH ROW EXECUTE FUNCTION log_balance()',
    );
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("UPDATE accounts SET balance = 3 WHERE owner = 'cy'");
      expect((await sql.query('SELECT note FROM audit')).rows).toEqual([{ note: 'cy now 3' }]);
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([]);
      const result = await sql.commit();
      // With a trigger every table may be written by a statement that does not name it: all are checked.
      expect(result.tables).toEqual(['accounts', 'audit']);
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([{ note: 'cy now 3' }]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('leaves out a trigger whose function names the real schema, so it never writes there from the shadow', async () => {
    const db = await pgBackend.fresh();
    await db.real.raw(
      `CREATE FUNCTION log_public() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO public.audit (note) VALUES ('leak'); RETURN NEW; END $$`,
    );
    await db.real.raw(
      'CREATE TRIGGER leaky AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION log_public()',
    );
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("UPDATE accounts SET balance = 3 WHERE owner = 'cy'");
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([]);
      // The real trigger fires on replay and writes a row the shadow lacks: refused as a divergence.
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlReplayDivergedError);
      expect(err.tables).toEqual(['audit']);
      expect(await rows(db.real, 'SELECT note FROM audit')).toEqual([]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });
});

describe('StagedSql row tracking on sqlite3', () => {
  const sqlite = backends.find((b) => b.name === 'sqlite3')!;
  let n = 0;
  const staging = () => path.join(base, `sqlite-rows-${++n}`);

  it('tracks a wide table with a composite key and awkward names by row', async () => {
    const db = await sqlite.fresh();
    const T = `"we'ird ""t"""`;
    const cols = Array.from({ length: 70 }, (_, i) => `"c'${i}"" x" INTEGER`).join(', ');
    await db.real.raw(`CREATE TABLE ${T} (a TEXT, b INTEGER, ${cols}, PRIMARY KEY (a, b))`);
    await db.real.raw(`INSERT INTO ${T} (a, b) VALUES ('k', 1), ('k', 2)`);
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query(`UPDATE ${T} SET "c'69"" x" = 5 WHERE a = 'k' AND b = 1`);
      await db.real.raw(`UPDATE ${T} SET "c'0"" x" = 9 WHERE b = 2`);
      await sql.commit();
      expect(
        await rows(db.real, `SELECT b, "c'0"" x" AS c0, "c'69"" x" AS c69 FROM ${T} ORDER BY b`),
      ).toEqual([
        { b: 1, c0: null, c69: 5 },
        { b: 2, c0: 9, c69: null },
      ]);
      await sql.query(`DELETE FROM ${T} WHERE b = 2`);
      await db.real.raw(`UPDATE ${T} SET "c'1"" x" = 1 WHERE b = 2`);
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.rows).toEqual([{ table: `we'ird "t"`, key: "a='k', b=2" }]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });

  it('a row an INSERT OR REPLACE deletes through another unique column counts as written', async () => {
    const db = await sqlite.fresh();
    const sql = await StagedSql.open(db.options(staging()));
    try {
      await sql.query("INSERT OR REPLACE INTO accounts (id, owner, balance) VALUES (10, 'bob', 1)");
      expect((await sql.query("SELECT id FROM accounts WHERE owner = 'bob'")).rows).toEqual([{ id: 10 }]);
      await db.real.raw("UPDATE accounts SET balance = 51 WHERE owner = 'bob'");
      const err = await sql.commit().catch((e) => e);
      expect(err).toBeInstanceOf(SqlConflictError);
      expect(err.rows).toEqual([{ table: 'accounts', key: 'id=2' }]);
      await sql.discard();
      await sql.query("INSERT OR REPLACE INTO accounts (id, owner, balance) VALUES (10, 'bob', 1)");
      const result = await sql.commit();
      expect(await rows(db.real, "SELECT id, balance FROM accounts WHERE owner = 'bob'")).toEqual([
        { id: 10, balance: 1 },
      ]);
      await sql.compensate(result);
      expect(await rows(db.real, "SELECT id, balance FROM accounts WHERE owner = 'bob'")).toEqual([
        { id: 2, balance: 51 },
      ]);
      // The tracking lives outside the shadow's schema: the agent's view of sqlite_master is the real one's.
      const names = await sql.query("SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')");
      expect(names.rows).toEqual([]);
    } finally {
      await sql.close();
      await db.cleanup();
    }
  });
});
