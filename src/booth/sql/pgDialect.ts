/** The PostgreSQL side of the staged database: the shadow is a copy of the schema on the same server. */

import knexFactory, { type Knex } from 'knex';
import { requireOptional } from '../../errors/optionalDependency';
import {
  type Db,
  type Dialect,
  INTERNAL,
  quoteIdent,
  type SequencePosition,
  TABLES_LOG,
  type WrittenRow,
} from './dialect';
import { pgTableTrackingDdl, pgTrackingDdl, WRITTEN } from './rowTracking';

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
  requireOptional('pg', "The Shadow Booth's PostgreSQL staging");
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
