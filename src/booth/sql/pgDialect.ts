/**
 * The PostgreSQL side of the staged database: the shadow is a copy of the schema on the same server, and the
 * agent's statements run as a login role made for the session that can use nothing but that copy (no rights on
 * the real schema or any other, no superuser, no server files). The booth's own tables (statement log, step
 * checkpoints, row tracking) sit in a second schema the role cannot touch; it appends to them only through two
 * SECURITY DEFINER functions that want a key only the booth knows, so a statement and its log row still commit
 * in one transaction on the role's connection.
 */
import { randomBytes } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { requireOptional } from '../../errors/optionalDependency';
import {
  type AgentAccess,
  type Db,
  type Dialect,
  INTERNAL,
  quoteIdent,
  type SequencePosition,
  TABLES_LOG,
  type WrittenRow,
} from './dialect';
import { SqlConfigError, SqlRefusedError, SqlStatementTimeoutError } from './errors';
import { pgTableTrackingDdl, pgTrackingDdl, WRITTEN } from './rowTracking';
import { STEPS } from './sessionState';

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
    `SELECT pg_get_triggerdef(g.oid, true) AS def, p.prosrc AS src, p.prosecdef AS definer, coalesce(array_to_string(p.proconfig, ','), '') AS config
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
  for (const g of triggers.rows as { def: string; src: string; definer: boolean; config: string }[]) {
    // A SECURITY DEFINER function would run with its owner's rights, past the agent's role: left out too.
    if (g.definer || /search_path/i.test(g.config) || qualifies(g.src)) continue;
    await trx.raw(g.def);
  }
  await trx.raw(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
}

function pgKnex(connection: Knex.PgConnectionConfig | string, schema: string): Knex {
  requireOptional('pg', "The Shadow Booth's PostgreSQL staging");
  return knexFactory({ client: 'pg', connection, searchPath: [schema], pool: { min: 0, max: 2 } });
}

/** The schema holding a session's bookkeeping, beside its shadow. */
const boothSchemaOf = (shadow: string) => shadow.replace(/^jbx_shadow_/, 'jbx_booth_');

/** The booth's connection settings with the session role's name and password instead of its own. */
function agentConnection(
  connection: Knex.PgConnectionConfig | string,
  agent: AgentAccess,
): Knex.PgConnectionConfig | string {
  if (typeof connection === 'string') {
    const url = new URL(connection);
    url.username = agent.role;
    url.password = agent.password;
    return url.toString();
  }
  return { ...connection, user: agent.role, password: agent.password };
}

/** `permission denied for table pg_authid` → `pg_authid`. */
function deniedObject(message: string): string | null {
  const m =
    /(?:permission denied for|must be owner of)\s+(?:materialized view|large object|table|schema|function|relation|sequence|view|database|procedure|type|language|column)\s+(\S+)/i.exec(
      message,
    );
  return m?.[1] ?? null;
}

/** The session's bookkeeping, its role's grants and its two entry points (run inside createShadow's transaction). */
async function createBookkeeping(
  trx: Knex.Transaction,
  shadow: string,
  tables: string[],
  keyed: Map<string, string[]>,
  agent: AgentAccess,
  logDdl: string,
): Promise<void> {
  const S = quoteIdent(shadow);
  const B = quoteIdent(boothSchemaOf(shadow));
  const A = quoteIdent(agent.role);
  await trx.raw(`CREATE SCHEMA ${B}`);
  await trx.raw(logDdl.replace('CREATE TABLE IF NOT EXISTS ', `CREATE TABLE ${B}.`));
  await trx.raw(
    `CREATE TABLE ${B}.${STEPS} (id TEXT PRIMARY KEY, attempt INTEGER NOT NULL, result TEXT NOT NULL)`,
  );
  await trx.raw(`CREATE TABLE ${B}."_jukebox_key" (h BYTEA NOT NULL)`);
  await trx.raw(`INSERT INTO ${B}."_jukebox_key" VALUES (sha256(convert_to(?, 'UTF8')))`, [agent.key]);
  for (const ddl of pgTrackingDdl(boothSchemaOf(shadow))) await trx.raw(ddl);
  for (const name of tables) {
    const keys = keyed.get(name);
    if (keys !== undefined)
      for (const ddl of pgTableTrackingDdl(shadow, name, keys, boothSchemaOf(shadow))) await trx.raw(ddl);
  }
  const guard = `IF sha256(convert_to(k, 'UTF8')) IS DISTINCT FROM (SELECT h FROM ${B}."_jukebox_key") THEN
    RAISE EXCEPTION 'only the booth writes its bookkeeping' USING ERRCODE = '42501';
  END IF;`;
  await trx.raw(`CREATE FUNCTION ${B}.record(k text, kind text, statement text, params text, rows_affected bigint, names text, verb text, result text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $jbx$
DECLARE s bigint;
BEGIN
  ${guard}
  INSERT INTO ${B}.${TABLES_LOG} (kind, statement, params, rows_affected, names, verb, result)
    VALUES (kind, statement, params, rows_affected, names, verb, result) RETURNING seq INTO s;
  RETURN s;
END $jbx$`);
  await trx.raw(`CREATE FUNCTION ${B}.checkpoint(k text, id text, attempt integer, result text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $jbx$
BEGIN
  ${guard}
  INSERT INTO ${B}.${STEPS} (id, attempt, result) VALUES (id, attempt, result);
END $jbx$`);
  await trx.raw(`REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ${B} FROM PUBLIC`);
  await trx.raw(`GRANT USAGE ON SCHEMA ${B} TO ${A}`);
  await trx.raw(
    `GRANT EXECUTE ON FUNCTION ${B}.record(text, text, text, text, bigint, text, text, text) TO ${A}`,
  );
  await trx.raw(`GRANT EXECUTE ON FUNCTION ${B}.checkpoint(text, text, integer, text) TO ${A}`);
  // The shadow: its rows, not its tables (the booth owns them, so their tracking triggers stay put); new
  // tables the agent creates are its own.
  await trx.raw(`GRANT USAGE, CREATE ON SCHEMA ${S} TO ${A}`);
  await trx.raw(
    `GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES ON ALL TABLES IN SCHEMA ${S} TO ${A}`,
  );
  await trx.raw(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${S} TO ${A}`);
  // A view runs with its owner's rights: owned by the booth, a copied view naming another schema would read it.
  const views = await trx.raw(
    "SELECT c.relname AS v FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = to_regnamespace(?)",
    [quoteIdent(shadow)],
  );
  for (const { v } of views.rows as { v: string }[])
    await trx.raw(`ALTER VIEW ${S}.${quoteIdent(v)} OWNER TO ${A}`);
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
      const agent: AgentAccess = {
        role: `jbx_agent_${sessionId}`,
        password: randomBytes(24).toString('hex'),
        key: randomBytes(32).toString('hex'),
      };
      const A = quoteIdent(agent.role);
      // One repeatable-read transaction: every table is copied as of the same instant, and a failure leaves no
      // role or schema behind (both are transactional in PostgreSQL).
      await real.transaction(
        async (trx) => {
          try {
            await trx.raw(
              `CREATE ROLE ${A} LOGIN PASSWORD '${agent.password}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 4`,
            );
            // The booth manages what the role creates (its new tables, sequences) and hands views to it.
            await trx.raw(`GRANT ${A} TO CURRENT_USER`);
            await trx.raw(`CREATE SCHEMA ${S}`);
          } catch (err) {
            throw new SqlConfigError(
              `the booth's PostgreSQL role cannot create the session's role and schema (${err instanceof Error ? err.message : String(err)}); it needs CREATEROLE and CREATE on the database (docs/shadow-booth.md, "What PostgreSQL must grant")`,
              err,
            );
          }
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
          const keyed = new Map<string, string[]>();
          for (const name of tables) {
            const keys = await dialect.keyColumns(trx, name);
            if (keys !== null) keyed.set(name, keys);
          }
          await createBookkeeping(trx, shadow, tables, keyed, agent, dialect.logDdl());
        },
        { isolationLevel: 'repeatable read' },
      );
      return { shadow, agent };
    },
    openShadow: (ref) => pgKnex(t.connection, ref.shadow),
    openAgent(ref, _booth, options) {
      if (ref.agent === undefined)
        throw new SqlConfigError('this session has no role of its own; discard its staging directory');
      return knexFactory({
        client: 'pg',
        connection: {
          ...(() => {
            const c = agentConnection(t.connection, ref.agent!);
            return typeof c === 'string' ? { connectionString: c } : c;
          })(),
          ...(options.timeoutMs !== undefined ? { statement_timeout: options.timeoutMs } : {}),
        } as Knex.PgConnectionConfig,
        searchPath: [ref.shadow],
        pool: { min: 0, max: 1 },
      });
    },
    async dropShadow(ref) {
      await real.transaction(async (trx) => {
        await trx.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(ref.shadow)} CASCADE`);
        await trx.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(boothSchemaOf(ref.shadow))} CASCADE`);
        if (ref.agent === undefined) return;
        const exists = await trx.raw('SELECT 1 FROM pg_roles WHERE rolname = ?', [ref.agent.role]);
        if (exists.rows.length === 0) return;
        const A = quoteIdent(ref.agent.role);
        await trx.raw(`DROP OWNED BY ${A}`);
        await trx.raw(`DROP ROLE ${A}`);
      });
    },
    async shadowExists(ref) {
      const r = await real.raw('SELECT 1 FROM pg_namespace WHERE nspname = ?', [ref.shadow]);
      return r.rows.length > 0;
    },
    bookkeeping: (ref, name) => `${quoteIdent(boothSchemaOf(ref.shadow))}.${quoteIdent(name)}`,
    async logStatement(trx, ref, r) {
      const res = await trx.raw(
        `SELECT ${quoteIdent(boothSchemaOf(ref.shadow))}.record(?, ?, ?, ?, ?, ?, ?, ?) AS seq`,
        [ref.agent?.key ?? '', r.kind, r.statement, r.params, r.rowsAffected, r.names, r.verb, r.result],
      );
      return Number(res.rows[0].seq);
    },
    async insertCheckpoint(trx, ref, id, attempt, result) {
      await trx.raw(`SELECT ${quoteIdent(boothSchemaOf(ref.shadow))}.checkpoint(?, ?, ?, ?)`, [
        ref.agent?.key ?? '',
        id,
        attempt,
        result,
      ]);
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
    async exec(db, sql, bindings, write, options = {}) {
      let r: { rows?: Record<string, unknown>[]; rowCount?: number | null };
      try {
        r = await db.raw(sql, bindings as never);
      } catch (err) {
        const e = err as { code?: string; message?: string };
        if (
          e.code === '57014' &&
          options.timeoutMs !== undefined &&
          /statement timeout/i.test(e.message ?? '')
        )
          throw new SqlStatementTimeoutError(sql, options.timeoutMs, false, err);
        // insufficient_privilege: the role reached for something outside the shadow.
        if (e.code === '42501')
          throw new SqlRefusedError(
            sql,
            'outside-shadow',
            `the database refused the run's role: ${e.message ?? ''}; statements may use only the run's shadow`,
            deniedObject(e.message ?? ''),
            err,
          );
        throw err;
      }
      return {
        rows: (r.rows ?? []) as Record<string, unknown>[],
        rowsAffected: write ? Number(r.rowCount ?? 0) : 0,
      };
    },
    // The bookkeeping table is created first inside the transaction; pg's locks are taken by name (lock below).
    writeTransaction: (fn) =>
      real.transaction(async (trx) => {
        await trx.raw(dialect.commitsDdl());
        return fn(trx);
      }),
    locksTables: true,
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
    async writtenRows(shadow, ref) {
      const r = await shadow.raw(
        `SELECT tbl AS "table", key, pre FROM ${quoteIdent(boothSchemaOf(ref.shadow))}.${WRITTEN} ORDER BY tbl, key`,
      );
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
