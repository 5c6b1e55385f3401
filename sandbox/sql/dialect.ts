/**
 * What differs between SQLite and PostgreSQL: how a shadow is made (a file copy vs a schema copy), how tables
 * are listed and fingerprinted, how undo images are taken and restored. Everything else in StagedSql is shared.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { quoteIdent } from './quoting';
import {
  pgTableTrackingDdl,
  pgTrackingDdl,
  SQLITE_WRITTEN_DDL,
  sqliteRowObject,
  sqliteTrackingDdl,
  WRITTEN,
} from './rowTracking';
import type { Client } from './statement';
import { type Encoded, encodeValue } from './values';

export type Db = Knex | Knex.Transaction;

export interface ExecResult {
  rows: Record<string, unknown>[];
  rowsAffected: number;
}

/** A row a staged write touched on the shadow: its key and its contents before the first touch (null: created). */
export interface WrittenRow {
  table: string;
  key: string;
  pre: string | null;
}

export interface Dialect {
  readonly client: Client;
  /** Identifies the real database, so a stagingDir is never reused against another one. */
  readonly target: string;
  readonly real: Knex;
  /** Schema names a statement may not use as qualifiers. */
  forbiddenSchemas(): Promise<Set<string>>;
  /** Takes a consistent snapshot of the real database; returns where the shadow lives. */
  createShadow(sessionId: string, stagingDir: string): Promise<string>;
  openShadow(shadow: string): Knex;
  dropShadow(shadow: string): Promise<void>;
  listTables(db: Db): Promise<string[]>;
  /** True when triggers or views exist, so a statement may touch tables it does not name. */
  hasIndirection(db: Db): Promise<boolean>;
  hasTable(db: Db, table: string): Promise<boolean>;
  fingerprint(db: Db, table: string): Promise<string>;
  exec(db: Db, sql: string, bindings: unknown, write: boolean): Promise<ExecResult>;
  /** Makes other writers wait until this transaction ends (SQLite: the write lock; pg: table locks). */
  lock(trx: Knex.Transaction, tables: string[]): Promise<void>;
  image(trx: Knex.Transaction, table: string): Promise<Encoded>;
  restore(trx: Knex.Transaction, table: string, image: Encoded): Promise<void>;
  /** Where the shadow's sequences stand (pg: sequences are not transactional, a failed insert still moves them). */
  sequencePositions(shadow: Db): Promise<SequencePosition[]>;
  /** Puts sequences back where `sequencePositions` found them. */
  resetSequences(shadow: Db, positions: readonly SequencePosition[]): Promise<void>;
  /** Primary-key columns in key order; null when the table has none or does not exist. */
  keyColumns(db: Db, table: string): Promise<string[] | null>;
  /** The rows the run's writes touched on the shadow, recorded by the tracking triggers (sandbox/sql/rowTracking.ts). */
  writtenRows(shadow: Db): Promise<WrittenRow[]>;
  /** Each key's row now, in the same encoding as a pre-image; null when no row has that key. */
  rowImages(db: Db, table: string, keys: readonly string[]): Promise<(string | null)[]>;
  /** Deletes the rows at these keys, then inserts the images that are not null. */
  restoreRows(trx: Knex.Transaction, table: string, rows: readonly RowImage[]): Promise<void>;
  /** `col=value, ...`, for error messages. */
  describeKey(key: string): string;
  /** A key with a NULL part does not name one row (SQLite lets such keys repeat). */
  keyHasNull(key: string): boolean;
  logDdl(): string;
  commitsDdl(): string;
  close(): Promise<void>;
}

export interface SequencePosition {
  name: string;
  /** null: never called (nextval returns the start value next). */
  last: string | null;
  start: string;
}

export interface RowImage {
  key: string;
  image: string | null;
}

export { quoteIdent };

const TABLES_LOG = '_jukebox_log';
const INTERNAL = '_jukebox_';

function sqliteKnex(filename: string): Knex {
  return knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (
        conn: { run(sql: string, cb: (err: unknown) => void): void },
        done: (err: unknown, c: unknown) => void,
      ) => conn.run('PRAGMA busy_timeout = 5000', (err) => done(err, conn)),
    },
  });
}

type SqliteConnection = {
  run(sql: string, params: unknown[], cb: (err: unknown) => void): void;
  all(sql: string, params: unknown[], cb: (err: unknown, rows: unknown[]) => void): void;
  exec(sql: string, cb: (err: unknown) => void): void;
};

/** Creates the TEMP tracking triggers; they live only on this connection, never in the shadow's sqlite_master. */
async function installSqliteTracking(conn: SqliteConnection): Promise<void> {
  const run = (sql: string, params: unknown[] = []) =>
    new Promise<void>((resolve, reject) => conn.run(sql, params, (err) => (err ? reject(err) : resolve())));
  const all = <T>(sql: string, params: unknown[] = []) =>
    new Promise<T[]>((resolve, reject) =>
      conn.all(sql, params, (err, rows) => (err ? reject(err) : resolve(rows as T[]))),
    );
  await run('PRAGMA busy_timeout = 5000');
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

function sqliteShadowKnex(filename: string): Knex {
  return knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: SqliteConnection, done: (err: unknown, c: unknown) => void) => {
        installSqliteTracking(conn).then(
          () => done(null, conn),
          (err) => done(err, conn),
        );
      },
    },
  });
}

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

export function sqliteDialect(filename: string): Dialect {
  const real = sqliteKnex(filename);
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
      return file;
    },
    openShadow: (shadow) => sqliteShadowKnex(shadow),
    async dropShadow(shadow) {
      for (const suffix of ['', '-journal', '-wal', '-shm']) await fs.rm(shadow + suffix, { force: true });
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
    async exec(db, sql, bindings, write) {
      const rows = (await db.raw(sql, bindings as never)) as Record<string, unknown>[];
      let rowsAffected = 0;
      if (write) {
        const ch = (await db.raw('SELECT changes() AS n')) as { n: number }[];
        rowsAffected = Number(ch[0]?.n ?? 0);
      }
      return { rows: Array.isArray(rows) ? rows : [], rowsAffected };
    },
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
      const cols = await sqliteColumns(db, table);
      const out: (string | null)[] = [];
      for (const key of keys) {
        const where = sqliteLiterals(key)
          .map(([c, v]) => `${quoteIdent(c)} = ${v}`)
          .join(' AND ');
        const rows = (await db.raw(
          `SELECT ${sqliteRowObject('', cols)} AS img FROM main.${quoteIdent(table)} WHERE ${where}`,
        )) as { img: string }[];
        out.push(rows[0]?.img ?? null);
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

export interface PgTarget {
  connection: Knex.PgConnectionConfig | string;
  schema: string;
}

/** Columns an INSERT may name: not dropped, not generated. */
async function pgInsertableColumns(db: Db, quotedName: string): Promise<string[]> {
  const r = await db.raw(
    "SELECT attname AS c FROM pg_attribute WHERE attrelid = to_regclass(?) AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
    [quotedName],
  );
  return (r.rows as { c: string }[]).map((x) => x.c);
}

/**
 * Foreign keys, views and user triggers of the real schema, recreated on the shadow's tables. Their definitions
 * are printed while the real schema is the search_path (so its names print unqualified) and run with the shadow
 * first on it (so those names resolve to shadow tables, and functions to the real schema's). A trigger is
 * copied only when its function cannot name the real schema: no search_path setting of its own and no
 * `schema.` in its source; the others are left out, the session then compares every table whole, and a
 * difference they make shows at commit as a divergence.
 */
async function copyPgDependents(trx: Knex.Transaction, schema: string, shadow: string): Promise<void> {
  const ns = '(SELECT oid FROM pg_namespace WHERE nspname = ?)';
  const fks = await trx.raw(
    `SELECT c.conname AS name, k.relname AS tbl, pg_get_constraintdef(c.oid) AS def
       FROM pg_constraint c JOIN pg_class k ON k.oid = c.conrelid
      WHERE c.contype = 'f' AND k.relnamespace = ${ns} AND left(k.relname, 9) <> ? ORDER BY c.oid`,
    [schema, INTERNAL],
  );
  const views = await trx.raw(
    `SELECT c.relname AS name, pg_get_viewdef(c.oid) AS def FROM pg_class c
      WHERE c.relkind = 'v' AND c.relnamespace = ${ns} ORDER BY c.oid`,
    [schema],
  );
  const triggers = await trx.raw(
    `SELECT pg_get_triggerdef(g.oid, true) AS def, p.prosrc AS src, coalesce(array_to_string(p.proconfig, ','), '') AS config
       FROM pg_trigger g JOIN pg_class k ON k.oid = g.tgrelid JOIN pg_proc p ON p.oid = g.tgfoid
      WHERE NOT g.tgisinternal AND k.relnamespace = ${ns} AND k.relkind = 'r' ORDER BY g.oid`,
    [schema],
  );
  const qualifies = (src: string) => {
    const q = schema.toLowerCase();
    const body = src.toLowerCase();
    return (
      body.includes(`${q}.`) || body.includes(`${quoteIdent(q)}.`) || body.includes(`${quoteIdent(schema)}.`)
    );
  };
  const S = quoteIdent(shadow);
  await trx.raw(`SET LOCAL search_path TO ${S}, ${quoteIdent(schema)}`);
  for (const fk of fks.rows as { name: string; tbl: string; def: string }[])
    await trx.raw(`ALTER TABLE ${S}.${quoteIdent(fk.tbl)} ADD CONSTRAINT ${quoteIdent(fk.name)} ${fk.def}`);
  for (const v of views.rows as { name: string; def: string }[])
    await trx.raw(`CREATE VIEW ${S}.${quoteIdent(v.name)} AS ${v.def}`);
  for (const g of triggers.rows as { def: string; src: string; config: string }[]) {
    if (/search_path/i.test(g.config) || qualifies(g.src)) continue;
    await trx.raw(g.def);
  }
  await trx.raw(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
}

function pgKnex(connection: Knex.PgConnectionConfig | string, schema: string): Knex {
  return knexFactory({ client: 'pg', connection, searchPath: [schema], pool: { min: 0, max: 2 } });
}

export function pgDialect(t: PgTarget): Dialect {
  const real = pgKnex(t.connection, t.schema);
  const c = typeof t.connection === 'string' ? new URL(t.connection) : null;
  const where =
    c !== null
      ? `${c.hostname}:${c.port || 5432}${c.pathname}`
      : `${t.connection && typeof t.connection === 'object' ? `${t.connection.host ?? 'localhost'}:${t.connection.port ?? 5432}/${t.connection.database ?? ''}` : ''}`;
  const dialect: Dialect = {
    client: 'pg',
    target: `pg:${where}#${t.schema}`,
    real,
    async forbiddenSchemas() {
      const r = await real.raw(
        "SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema')",
      );
      return new Set((r.rows as { nspname: string }[]).map((x) => x.nspname.toLowerCase()));
    },
    async createShadow(sessionId) {
      const shadow = `jbx_shadow_${sessionId}`;
      const S = quoteIdent(shadow);
      const R = quoteIdent(t.schema);
      // One repeatable-read transaction: every table is copied as of the same instant.
      await real.transaction(
        async (trx) => {
          await trx.raw(`CREATE SCHEMA ${S}`);
          const tables = await dialect.listTables(trx);
          for (const name of tables) {
            const T = quoteIdent(name);
            await trx.raw(`CREATE TABLE ${S}.${T} (LIKE ${R}.${T} INCLUDING ALL)`);
            // Generated columns cannot be inserted into (the copy recomputes them); identity columns keep their values.
            const copied = (await pgInsertableColumns(trx, `${R}.${T}`)).map(quoteIdent).join(', ');
            await trx.raw(
              `INSERT INTO ${S}.${T} (${copied}) OVERRIDING SYSTEM VALUE SELECT ${copied} FROM ${R}.${T}`,
            );
            const cols = await trx.raw(
              'SELECT column_name AS c FROM information_schema.columns WHERE table_schema = ? AND table_name = ?',
              [t.schema, name],
            );
            for (const { c: col } of cols.rows as { c: string }[]) {
              const seqs = await trx.raw(
                'SELECT pg_get_serial_sequence(?, ?) AS r, pg_get_serial_sequence(?, ?) AS s',
                [`${R}.${T}`, col, `${S}.${T}`, col],
              );
              const { r, s } = seqs.rows[0] as { r: string | null; s: string | null };
              if (r === null) continue;
              const cur = (await trx.raw(`SELECT last_value, is_called FROM ${r}`)).rows[0] as {
                last_value: string;
                is_called: boolean;
              };
              // A serial column's copied default still calls the real sequence; give the shadow its own.
              let seq = s;
              if (s === null || s === r) {
                seq = `${S}.${quoteIdent(`${name}_${col}_seq`)}`;
                await trx.raw(`CREATE SEQUENCE ${seq}`);
                await trx.raw(
                  `ALTER TABLE ${S}.${T} ALTER COLUMN ${quoteIdent(col)} SET DEFAULT nextval('${seq.replace(/'/g, "''")}')`,
                );
              }
              await trx.raw('SELECT setval(?::regclass, ?, ?)', [seq, cur.last_value, cur.is_called]);
            }
          }
          await copyPgDependents(trx, t.schema, shadow);
          await trx.raw(dialect.logDdl().replace('CREATE TABLE IF NOT EXISTS ', `CREATE TABLE ${S}.`));
          for (const ddl of pgTrackingDdl(shadow)) await trx.raw(ddl);
          for (const name of tables) {
            const keys = await dialect.keyColumns(trx, name);
            if (keys !== null) for (const ddl of pgTableTrackingDdl(shadow, name, keys)) await trx.raw(ddl);
          }
        },
        { isolationLevel: 'repeatable read' },
      );
      return shadow;
    },
    openShadow: (shadow) => pgKnex(t.connection, shadow),
    async dropShadow(shadow) {
      await real.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(shadow)} CASCADE`);
    },
    async listTables(db) {
      const r = await db.raw(
        'SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND left(tablename, 9) <> ? ORDER BY tablename',
        [INTERNAL],
      );
      return (r.rows as { name: string }[]).map((x) => x.name);
    },
    async hasIndirection(db) {
      const r = await db.raw(
        `SELECT (SELECT count(*) FROM pg_trigger g JOIN pg_class k ON k.oid = g.tgrelid WHERE NOT g.tgisinternal AND left(g.tgname, 9) <> '_jukebox_' AND k.relnamespace = current_schema()::regnamespace)
              + (SELECT count(*) FROM pg_views WHERE schemaname = current_schema()) AS n`,
      );
      return Number(r.rows[0]?.n ?? 0) > 0;
    },
    async hasTable(db, table) {
      const r = await db.raw('SELECT to_regclass(?) AS r', [quoteIdent(table)]);
      return r.rows[0]?.r !== null;
    },
    async fingerprint(db, table) {
      if (!(await dialect.hasTable(db, table))) return 'absent';
      const r = await db.raw(
        `SELECT count(*)::text AS n, coalesce(md5(string_agg(md5(x::text), ',' ORDER BY md5(x::text))), '') AS h FROM ${quoteIdent(table)} AS x`,
      );
      return `${r.rows[0].n}:${r.rows[0].h}`;
    },
    async exec(db, sql, bindings, write) {
      const r = await db.raw(sql, bindings as never);
      return {
        rows: (r.rows ?? []) as Record<string, unknown>[],
        rowsAffected: write ? Number(r.rowCount ?? 0) : 0,
      };
    },
    async lock(trx, tables) {
      const present: string[] = [];
      for (const name of tables) if (await dialect.hasTable(trx, name)) present.push(name);
      if (present.length > 0)
        await trx.raw(`LOCK TABLE ${present.map(quoteIdent).join(', ')} IN EXCLUSIVE MODE`);
    },
    async image(trx, table) {
      const r = await trx.raw(
        `SELECT coalesce(json_agg(x), '[]'::json)::text AS j FROM ${quoteIdent(table)} AS x`,
      );
      return r.rows[0].j as string;
    },
    async restore(trx, table, image) {
      const T = quoteIdent(table);
      await trx.raw(`DELETE FROM ${T}`);
      await trx.raw(`INSERT INTO ${T} SELECT * FROM json_populate_recordset(NULL::${T}, ?::json)`, [
        image as string,
      ]);
    },
    async sequencePositions(shadow) {
      const r = await shadow.raw(
        "SELECT format('%I.%I', schemaname, sequencename) AS name, last_value::text AS last, start_value::text AS start FROM pg_sequences WHERE schemaname = current_schema()",
      );
      return r.rows as SequencePosition[];
    },
    async resetSequences(shadow, positions) {
      const now = new Map((await dialect.sequencePositions(shadow)).map((p) => [p.name, p.last]));
      for (const p of positions) {
        if (now.get(p.name) === p.last) continue;
        await shadow.raw('SELECT setval(?::regclass, ?, ?)', [p.name, p.last ?? p.start, p.last !== null]);
      }
    },
    async keyColumns(db, table) {
      const r = await db.raw(
        `SELECT a.attname AS c FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
          WHERE i.indrelid = to_regclass(?) AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`,
        [quoteIdent(table)],
      );
      const cols = (r.rows as { c: string }[]).map((x) => x.c);
      return cols.length === 0 ? null : cols;
    },
    async writtenRows(shadow) {
      const r = await shadow.raw(`SELECT tbl AS "table", key, pre FROM ${WRITTEN} ORDER BY tbl, key`);
      return r.rows as WrittenRow[];
    },
    async rowImages(db, table, keys) {
      if (keys.length === 0) return [];
      const T = quoteIdent(table);
      const cols = (await dialect.keyColumns(db, table)) ?? [];
      const match = `(${cols.map((c) => `x.${quoteIdent(c)}`).join(', ')}) = (${cols.map((c) => `p.${quoteIdent(c)}`).join(', ')})`;
      const r = await db.raw(
        `SELECT (SELECT to_jsonb(x)::text FROM ${T} AS x WHERE ${match}) AS img
           FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(key, ord)
           CROSS JOIN LATERAL jsonb_populate_record(NULL::${T}, e.key) AS p ORDER BY e.ord`,
        [`[${keys.join(',')}]`],
      );
      return (r.rows as { img: string | null }[]).map((x) => x.img);
    },
    async restoreRows(trx, table, rows) {
      if (rows.length === 0) return;
      const T = quoteIdent(table);
      const keys = (await dialect.keyColumns(trx, table)) ?? [];
      await trx.raw(
        `DELETE FROM ${T} AS x USING jsonb_array_elements(?::jsonb) AS e(key)
          WHERE (${keys.map((c) => `x.${quoteIdent(c)}`).join(', ')}) = (SELECT ${keys.map((c) => `p.${quoteIdent(c)}`).join(', ')} FROM jsonb_populate_record(NULL::${T}, e.key) AS p)`,
        [`[${rows.map((x) => x.key).join(',')}]`],
      );
      const images = rows.flatMap((x) => (x.image === null ? [] : [x.image]));
      if (images.length === 0) return;
      const cols = (await pgInsertableColumns(trx, T)).map(quoteIdent).join(', ');
      await trx.raw(
        `INSERT INTO ${T} (${cols}) OVERRIDING SYSTEM VALUE SELECT ${cols} FROM jsonb_populate_recordset(NULL::${T}, ?::jsonb)`,
        [`[${images.join(',')}]`],
      );
    },
    describeKey: (key) =>
      Object.entries(JSON.parse(key) as Record<string, unknown>)
        .map(([c, v]) => `${c}=${JSON.stringify(v)}`)
        .join(', '),
    keyHasNull: (key) => Object.values(JSON.parse(key) as Record<string, unknown>).includes(null),
    logDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${TABLES_LOG} (seq BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, statement TEXT NOT NULL, params TEXT NOT NULL, rows_affected BIGINT NOT NULL, names TEXT NOT NULL, verb TEXT NOT NULL, result TEXT)`,
    commitsDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${INTERNAL}commits (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL, result TEXT NOT NULL, undo TEXT NOT NULL, after TEXT NOT NULL, compensated_at TEXT)`,
    close: () => real.destroy(),
  };
  return dialect;
}
