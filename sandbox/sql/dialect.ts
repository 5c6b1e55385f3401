/**
 * What differs between SQLite and PostgreSQL: how a shadow is made (a file copy vs a schema copy), how tables
 * are listed and fingerprinted, how undo images are taken and restored. Everything else in StagedSql is shared.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type { Client } from './statement';
import { type Encoded, encodeValue } from './values';

export type Db = Knex | Knex.Transaction;

export interface ExecResult {
  rows: Record<string, unknown>[];
  rowsAffected: number;
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
  fingerprint(db: Db, table: string): Promise<string>;
  exec(db: Db, sql: string, bindings: unknown, write: boolean): Promise<ExecResult>;
  /** Makes other writers wait until this transaction ends (SQLite: the write lock; pg: table locks). */
  lock(trx: Knex.Transaction, tables: string[]): Promise<void>;
  image(trx: Knex.Transaction, table: string): Promise<Encoded>;
  restore(trx: Knex.Transaction, table: string, image: Encoded): Promise<void>;
  logDdl(): string;
  commitsDdl(): string;
  close(): Promise<void>;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

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
    openShadow: (shadow) => sqliteKnex(shadow),
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
    async fingerprint(db, table) {
      const exists = (await db.raw("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?", [
        table,
      ])) as unknown[];
      if (exists.length === 0) return 'absent';
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
    logDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${TABLES_LOG} (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, statement TEXT NOT NULL, params TEXT NOT NULL, rows_affected INTEGER NOT NULL, names TEXT NOT NULL, verb TEXT NOT NULL)`,
    commitsDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${INTERNAL}commits (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL, result TEXT NOT NULL, undo TEXT NOT NULL, after TEXT NOT NULL, compensated_at TEXT)`,
    close: () => real.destroy(),
  };
}

export interface PgTarget {
  connection: Knex.PgConnectionConfig | string;
  schema: string;
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
            await trx.raw(`INSERT INTO ${S}.${T} SELECT * FROM ${R}.${T}`);
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
          await trx.raw(dialect.logDdl().replace('CREATE TABLE IF NOT EXISTS ', `CREATE TABLE ${S}.`));
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
        `SELECT (SELECT count(*) FROM pg_trigger g JOIN pg_class k ON k.oid = g.tgrelid WHERE NOT g.tgisinternal AND k.relnamespace = current_schema()::regnamespace)
              + (SELECT count(*) FROM pg_views WHERE schemaname = current_schema()) AS n`,
      );
      return Number(r.rows[0]?.n ?? 0) > 0;
    },
    async fingerprint(db, table) {
      const exists = await db.raw('SELECT to_regclass(?) AS r', [quoteIdent(table)]);
      if (exists.rows[0]?.r === null) return 'absent';
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
      for (const name of tables) {
        const r = await trx.raw('SELECT to_regclass(?) AS r', [quoteIdent(name)]);
        if (r.rows[0]?.r !== null) present.push(name);
      }
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
    logDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${TABLES_LOG} (seq BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, statement TEXT NOT NULL, params TEXT NOT NULL, rows_affected BIGINT NOT NULL, names TEXT NOT NULL, verb TEXT NOT NULL)`,
    commitsDdl: () =>
      `CREATE TABLE IF NOT EXISTS ${INTERNAL}commits (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL, result TEXT NOT NULL, undo TEXT NOT NULL, after TEXT NOT NULL, compensated_at TEXT)`,
    close: () => real.destroy(),
  };
  return dialect;
}
