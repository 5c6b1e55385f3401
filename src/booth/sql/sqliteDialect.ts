/** The SQLite side of the staged database: the shadow is a `VACUUM INTO` copy of the file, tracked by TEMP triggers. */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { requireOptional } from '../../errors/optionalDependency';
import { isCode, lstatOrNull } from '../durable';
import { type Db, type Dialect, INTERNAL, quoteIdent, TABLES_LOG, type WrittenRow } from './dialect';
import { SqlStatementTimeoutError } from './errors';
import { SQLITE_WRITTEN_DDL, sqliteRowObject, sqliteTrackingDdl, WRITTEN } from './rowTracking';
import { STEPS } from './sessionState';
import { checkCompiled, checkSchemaAfter } from './sqliteGuard';
import { type Encoded, encodeValue } from './values';

type SqliteConnection = {
  run(sql: string, params: unknown[], cb: (this: { changes?: number }, err: unknown) => void): void;
  all(sql: string, params: unknown[], cb: (err: unknown, rows: unknown[]) => void): void;
  exec(sql: string, cb: (err: unknown) => void): void;
  configure(option: 'limit', id: number, value: number): void;
  interrupt(): void;
};

/** sqlite3_limit id of the number of attached databases. */
const SQLITE_LIMIT_ATTACHED = 7;
/** On a knex config: the one connection of its pool (max 1), so a statement running too long can be interrupted. */
const CONNECTION = Symbol('jukebox.sqliteConnection');
type WithConnection = { [CONNECTION]?: { conn: SqliteConnection | null } };

function connectionOf(db: Db): SqliteConnection | null {
  return (db.client.config as WithConnection)[CONNECTION]?.conn ?? null;
}

/** Creates the TEMP tracking triggers; they live only on this connection, never in the shadow's sqlite_master. */
async function installSqliteTracking(conn: SqliteConnection): Promise<void> {
  const run = (sql: string, params: unknown[] = []) =>
    new Promise<void>((resolve, reject) => conn.run(sql, params, (err) => (err ? reject(err) : resolve())));
  const all = <T>(sql: string, params: unknown[] = []) =>
    new Promise<T[]>((resolve, reject) =>
      conn.all(sql, params, (err, rows) => (err ? reject(err) : resolve(rows as T[]))),
    );
  await run('PRAGMA busy_timeout = 5000');
  // The agent's connection attaches nothing, ever (the booth's own work on it needs no other database).
  conn.configure('limit', SQLITE_LIMIT_ATTACHED, 0);
  // A REPLACE (statement or ON CONFLICT REPLACE constraint) deletes rows that block it; only with recursive
  // triggers do those deletes fire the tracking triggers. With user triggers present that would change what
  // they do on the shadow, so it stays off then (every table is compared whole in that case anyway).
  const user = await all<{ n: number }>(
    "SELECT count(*) AS n FROM main.sqlite_master WHERE type = 'trigger'",
  );
  if (Number(user[0]?.n ?? 0) === 0) await run('PRAGMA recursive_triggers = ON');
  await run(SQLITE_WRITTEN_DDL);
  const tables = await all<{ name: string }>(
    "SELECT name FROM main.sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 9) <> ? AND upper(substr(sql, 1, 14)) <> 'CREATE VIRTUAL'",
    [INTERNAL],
  );
  for (const { name } of tables) {
    const info = await all<{ name: string; pk: number }>(
      "SELECT name, pk FROM pragma_table_info(?, 'main') ORDER BY cid",
      [name],
    );
    const keys = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
    if (keys.length === 0) continue;
    await new Promise<void>((resolve, reject) =>
      conn.exec(
        sqliteTrackingDdl(
          name,
          info.map((c) => c.name),
          keys.map((c) => c.name),
        ),
        (err) => (err ? reject(err) : resolve()),
      ),
    );
  }
}

type AfterCreate = (conn: SqliteConnection, done: (err: unknown, c: unknown) => void) => void;

const withBusyTimeout: AfterCreate = (conn, done) =>
  conn.run('PRAGMA busy_timeout = 5000', [], (err) => done(err, conn));

/**
 * The real database is shared by every run of every worker: a commit waits for the ones ahead of it (each holds
 * the write lock for milliseconds, but hundreds may queue) rather than failing after 5 s.
 */
export const REAL_BUSY_TIMEOUT_MS = 60_000;

const withRealBusyTimeout: AfterCreate = (conn, done) =>
  conn.run(`PRAGMA busy_timeout = ${REAL_BUSY_TIMEOUT_MS}`, [], (err) => done(err, conn));

const withTracking: AfterCreate = (conn, done) => {
  installSqliteTracking(conn).then(
    () => done(null, conn),
    (err) => done(err, conn),
  );
};

function sqliteKnex(filename: string, afterCreate: AfterCreate = withBusyTimeout): Knex {
  requireOptional('sqlite3', "The Shadow Booth's SQLite staging");
  const box: { conn: SqliteConnection | null } = { conn: null };
  const config: Knex.Config & WithConnection = {
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: SqliteConnection, done: (err: unknown, c: unknown) => void) => {
        box.conn = conn;
        afterCreate(conn, done);
      },
    },
  };
  config[CONNECTION] = box;
  return knexFactory(config);
}

/**
 * Real database files (device:inode) whose commit table a write transaction of this process made: later ones, of
 * any StagedSql on the file, skip the statement. A transaction that fails makes the next one make it again
 * (someone may have dropped the table meanwhile).
 */
const commitTableMade = new Set<string>();

/** The write transactions queued on each real database file in this process (see writeTransaction). */
const writersByFile = new Map<string, Promise<unknown>>();

function oneWriterAtATime<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const previous = writersByFile.get(file) ?? Promise.resolve();
  const next = previous.catch(() => {}).then(fn);
  writersByFile.set(file, next);
  void next
    .catch(() => {})
    .then(() => {
      if (writersByFile.get(file) === next) writersByFile.delete(file);
    });
  return next;
}

/** Keys looked up per SELECT by rowImages (a result row may have at most 2,000 columns). */
const ROW_IMAGES_PER_QUERY = 200;

/** A value as SQLite's quote() wrote it; anything else in a stored key or image means the record was tampered with. */
const SQLITE_LITERAL = /^(NULL|[-+0-9.eE]+|'(?:[^']|'')*'|X'[0-9A-Fa-f]*')$/;

function sqliteLiterals(json: string): [string, string][] {
  const entries = Object.entries(JSON.parse(json) as Record<string, string>);
  for (const [, v] of entries)
    if (typeof v !== 'string' || !SQLITE_LITERAL.test(v))
      throw new Error(`row record ${json} holds a value that is not an SQL literal`);
  return entries;
}

async function sqliteColumns(db: Db, table: string): Promise<string[]> {
  const rows = (await db.raw("SELECT name FROM pragma_table_info(?, 'main') ORDER BY cid", [table])) as {
    name: string;
  }[];
  return rows.map((r) => r.name);
}

/**
 * A row-tracked table's columns, read once per transaction: commit reads the written rows before and after the
 * replay, which never changes a row-tracked table's schema (a statement changing it makes the table compared
 * whole). Outside a transaction (the shadow at plan time, between staged statements) they are read every time.
 */
const columnsByTransaction = new WeakMap<Db, Map<string, Promise<string[]>>>();

function transactionColumns(db: Db, table: string): Promise<string[]> {
  if (!(db as Knex.Transaction).isTransaction) return sqliteColumns(db, table);
  let known = columnsByTransaction.get(db);
  if (known === undefined) {
    known = new Map();
    columnsByTransaction.set(db, known);
  }
  let cols = known.get(table);
  if (cols === undefined) {
    cols = sqliteColumns(db, table);
    known.set(table, cols);
  }
  return cols;
}

export function sqliteDialect(filename: string): Dialect {
  const real = sqliteKnex(filename, withRealBusyTimeout);
  return {
    client: 'sqlite3',
    target: `sqlite3:${filename}`,
    real,
    forbiddenSchemas: async () => new Set<string>(),
    async createShadow(sessionId, stagingDir) {
      const file = path.join(stagingDir, `shadow-${sessionId}.sqlite`);
      const tmp = `${file}.tmp`;
      await fs.rm(tmp, { force: true });
      // VACUUM INTO writes a transactionally consistent copy even while others write the real file.
      await real.raw('VACUUM INTO ?', [tmp]);
      const fh = await fs.open(tmp, 'r');
      await fh.sync();
      await fh.close();
      await fs.rename(tmp, file);
      const shadow = sqliteKnex(file);
      try {
        await shadow.raw(this.logDdl());
      } finally {
        await shadow.destroy();
      }
      return { shadow: file };
    },
    openShadow: (ref) => sqliteKnex(ref.shadow, withTracking),
    // One connection: a statement and its log row commit together; its guard keeps the agent off the log.
    openAgent: (_ref, booth) => booth,
    async dropShadow(ref) {
      // unlink, not rm: rm looks at each path before removing it, a round trip on the thread pool more.
      await Promise.all(
        ['', '-journal', '-wal', '-shm'].map((suffix) =>
          fs.unlink(ref.shadow + suffix).catch((err: unknown) => {
            if (!isCode(err, 'ENOENT')) throw err;
          }),
        ),
      );
    },
    shadowExists: async (ref) => (await lstatOrNull(ref.shadow)) !== null,
    bookkeeping: (_ref, name) => `main.${quoteIdent(name)}`,
    async logStatement(trx, _ref, r) {
      const rows = (await trx.raw(
        `INSERT INTO main.${TABLES_LOG} (kind, statement, params, rows_affected, names, verb, result) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
        [r.kind, r.statement, r.params, r.rowsAffected, r.names, r.verb, r.result],
      )) as { seq: number }[];
      return Number(rows[0]!.seq);
    },
    async insertCheckpoint(trx, _ref, id, attempt, result) {
      await trx.raw(`INSERT INTO main.${STEPS} (id, attempt, result) VALUES (?, ?, ?)`, [
        id,
        attempt,
        result,
      ]);
    },
    async listTables(db) {
      const rows = (await db.raw(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 9) <> ? ORDER BY name",
        [INTERNAL],
      )) as { name: string }[];
      return rows.map((r) => r.name);
    },
    async hasIndirection(db) {
      const rows = (await db.raw(
        "SELECT count(*) AS n FROM sqlite_master WHERE type IN ('trigger', 'view')",
      )) as { n: number }[];
      return Number(rows[0]?.n ?? 0) > 0;
    },
    async hasTable(db, table) {
      const rows = (await db.raw("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?", [
        table,
      ])) as unknown[];
      return rows.length > 0;
    },
    async fingerprint(db, table) {
      if (!(await this.hasTable(db, table))) return 'absent';
      const rows = (await db.raw(`SELECT * FROM ${quoteIdent(table)}`)) as Record<string, unknown>[];
      const lines = rows.map((r) => JSON.stringify(Object.values(r).map(encodeValue))).sort();
      return `${rows.length}:${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
    },
    async exec(db, sql, bindings, write, options = {}) {
      const checked = options.checked;
      const sent = checked === undefined ? null : db.raw(sql, bindings as never).toSQL();
      let before: Awaited<ReturnType<typeof checkCompiled>> = null;
      if (sent === null || !checked!.has(sent.sql)) {
        before = await checkCompiled(db, sql, bindings);
        // A schema change may give the same text another program: everything checked before it is checked again.
        if (sent !== null) before === null ? checked!.add(sent.sql) : checked!.clear();
      }
      const conn = options.timeoutMs === undefined && !options.countOnly ? null : connectionOf(db);
      // Only the count wanted (a replay at commit): run() returns SQLite's changes() with the statement, a round
      // trip fewer than asking for it after. A DML statement does all its changes in its first step, RETURNING or not.
      if (write && options.countOnly && before === null && options.timeoutMs === undefined && conn !== null) {
        const q = (sent ?? db.raw(sql, bindings as never).toSQL()).toNative();
        const changes = await new Promise<number>((resolve, reject) =>
          conn.run(q.sql, q.bindings as unknown[], function (err) {
            if (err) reject(err);
            else resolve(Number(this.changes ?? 0));
          }),
        );
        return { rows: [], rowsAffected: changes };
      }
      let timedOut = false;
      const timer =
        conn === null || options.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              conn.interrupt();
            }, options.timeoutMs);
      let rows: Record<string, unknown>[];
      try {
        rows = (await db.raw(sql, bindings as never)) as Record<string, unknown>[];
      } catch (err) {
        if (timedOut && (err as { code?: string }).code === 'SQLITE_INTERRUPT')
          throw new SqlStatementTimeoutError(sql, options.timeoutMs!, false, err);
        throw err;
      } finally {
        clearTimeout(timer);
      }
      if (before !== null) await checkSchemaAfter(db, sql, before);
      let rowsAffected = 0;
      if (write) {
        const ch = (await db.raw('SELECT changes() AS n')) as { n: number }[];
        rowsAffected = Number(ch[0]?.n ?? 0);
      }
      return { rows: Array.isArray(rows) ? rows : [], rowsAffected };
    },
    /**
     * One at a time per database file in this process. A connection waiting for SQLite's write lock sleeps in
     * its busy handler on a thread of libuv's pool (4 threads); a few commits of one worker waiting for it
     * would hold every thread, and the commit holding the lock could not run its next statement: every commit
     * stalled until the waiters timed out. So this process's commits queue here, and at most one of them waits
     * in SQLite, for other processes' writers. The bookkeeping table is made before the transaction opens, so
     * the transaction's first statement is the lock (see lock).
     */
    writeTransaction(fn) {
      return oneWriterAtATime(path.resolve(filename), async () => {
        // By inode: a file removed and made again at the same path is another database.
        const st = await fs.stat(filename);
        const file = `${st.dev}:${st.ino}`;
        const made = commitTableMade.has(file);
        if (!made) await real.raw(this.commitsDdl());
        commitTableMade.add(file);
        try {
          return await real.transaction(fn);
        } catch (err) {
          commitTableMade.delete(file);
          // Dropped by someone since this process made it: the transaction rolled back whole, so it runs again
          // with the table made again.
          if (!made || !String((err as Error)?.message).includes(`no such table: ${INTERNAL}commits`))
            throw err;
          await real.raw(this.commitsDdl());
          commitTableMade.add(file);
          return real.transaction(fn);
        }
      });
    },
    locksTables: false,
    async lock(trx) {
      // A write statement takes SQLite's RESERVED lock now, so no other writer can commit until we end.
      await trx.raw(`DELETE FROM ${quoteIdent(`${INTERNAL}commits`)} WHERE 0`);
    },
    async image(trx, table) {
      const rows = (await trx.raw(`SELECT * FROM ${quoteIdent(table)}`)) as Record<string, unknown>[];
      return rows.map((r) => encodeValue(r));
    },
    async restore(trx, table, image) {
      await trx.raw(`DELETE FROM ${quoteIdent(table)}`);
      for (const e of image as Encoded[]) {
        const row = (e as { $object: Record<string, Encoded> }).$object;
        const cols = Object.keys(row);
        if (cols.length === 0) continue;
        const values = cols.map((c) => {
          const v = row[c]!;
          return v !== null && typeof v === 'object' && '$bytes' in v
            ? Buffer.from(String(v.$bytes), 'base64')
            : v;
        });
        await trx.raw(
          `INSERT INTO ${quoteIdent(table)} (${cols.map(quoteIdent).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
          values as never,
        );
      }
    },
    // SQLite's AUTOINCREMENT counters live in sqlite_sequence, which rolls back with the statement.
    sequencePositions: async () => [],
    resetSequences: async () => {},
    async keyColumns(db, table) {
      const rows = (await db.raw(
        "SELECT name, pk FROM pragma_table_info(?, 'main') WHERE pk > 0 ORDER BY pk",
        [table],
      )) as { name: string }[];
      return rows.length === 0 ? null : rows.map((r) => r.name);
    },
    async writtenRows(shadow) {
      const rows = (await shadow.raw(
        `SELECT tbl AS "table", key, pre FROM main.${WRITTEN} ORDER BY tbl, key`,
      )) as WrittenRow[];
      return rows.map((r) => ({ table: r.table, key: r.key, pre: r.pre ?? null }));
    },
    async rowImages(db, table, keys) {
      if (keys.length === 0) return [];
      const cols = await transactionColumns(db, table);
      const img = sqliteRowObject('', cols);
      const out: (string | null)[] = [];
      // One round trip for many keys: each key's row is a scalar subquery of one SELECT, looked up by its key.
      for (let i = 0; i < keys.length; i += ROW_IMAGES_PER_QUERY) {
        const chunk = keys.slice(i, i + ROW_IMAGES_PER_QUERY);
        const parts = chunk.map((key, j) => {
          const where = sqliteLiterals(key)
            .map(([c, v]) => `${quoteIdent(c)} = ${v}`)
            .join(' AND ');
          return `(SELECT ${img} FROM main.${quoteIdent(table)} WHERE ${where}) AS i${j}`;
        });
        const rows = (await db.raw(`SELECT ${parts.join(', ')}`)) as Record<string, string | null>[];
        for (let j = 0; j < chunk.length; j++) out.push(rows[0]?.[`i${j}`] ?? null);
      }
      return out;
    },
    async restoreRows(trx, table, rows) {
      const T = `main.${quoteIdent(table)}`;
      for (const { key } of rows) {
        const where = sqliteLiterals(key)
          .map(([c, v]) => `${quoteIdent(c)} = ${v}`)
          .join(' AND ');
        await trx.raw(`DELETE FROM ${T} WHERE ${where}`);
      }
      for (const { image } of rows) {
        if (image === null) continue;
        const entries = sqliteLiterals(image);
        await trx.raw(
          `INSERT INTO ${T} (${entries.map(([c]) => quoteIdent(c)).join(', ')}) VALUES (${entries.map(([, v]) => v).join(', ')})`,
        );
      }
    },
    describeKey: (key) =>
      Object.entries(JSON.parse(key) as Record<string, string>)
        .map(([c, v]) => `${c}=${v}`)
        .join(', '),
    keyHasNull: (key) => Object.values(JSON.parse(key) as Record<string, string>).includes('NULL'),
    logDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${TABLES_LOG} (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, statement TEXT NOT NULL, params TEXT NOT NULL, rows_affected INTEGER NOT NULL, names TEXT NOT NULL, verb TEXT NOT NULL, result TEXT)`,
    commitsDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${INTERNAL}commits (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL, result TEXT NOT NULL, undo TEXT NOT NULL, after TEXT NOT NULL, compensated_at TEXT)`,
    close: () => real.destroy(),
  };
}
