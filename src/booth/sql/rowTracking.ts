/**
 * The shadow-side half of row-level conflict detection: triggers that record, for every row a staged write
 * touches, its primary key and its contents before the first touch (absent for a key the run created). commit()
 * compares those pre-images with the real rows, and the shadow's rows now with the real rows after replay.
 *
 * SQLite: TEMP triggers created on each shadow connection (TEMP triggers may write any database's tables),
 * writing into `_jukebox_written` next to `_jukebox_log` in the shadow file, so a staged statement and its
 * records commit together in one file, and the shadow's `sqlite_master` (what the agent sees, what the
 * indirection check reads) never shows a trigger. Keys and images are `json_object(col, quote(col), ...)`, so BLOBs and the integer/text
 * distinction survive; the agent's statements cannot reach the table (src/booth/sql/sqliteGuard.ts). PostgreSQL:
 * one plpgsql trigger function in the session's bookkeeping schema, SECURITY DEFINER, writing `to_jsonb` keys and
 * rows into `_jukebox_written` there, where the session's role has no rights; the shadow's tables belong to the
 * booth, so the role cannot drop or disable the triggers either.
 */
import { quoteIdent } from './quoting';

export const WRITTEN = '_jukebox_written';

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** SQLite limits a function to 127 arguments by default, so wide rows are built from merged 50-column objects. */
export function sqliteRowObject(prefix: string, cols: readonly string[]): string {
  const parts: string[] = [];
  for (let i = 0; i < cols.length; i += 50) {
    const chunk = cols.slice(i, i + 50);
    parts.push(`json_object(${chunk.map((c) => `${lit(c)}, quote(${prefix}${quoteIdent(c)})`).join(', ')})`);
  }
  return parts.reduce((acc, p) => `json_patch(${acc}, ${p})`);
}

export function sqliteTrackingDdl(table: string, cols: readonly string[], keys: readonly string[]): string {
  const T = `main.${quoteIdent(table)}`;
  const name = (what: string) => quoteIdent(`_jukebox_${what}_${table}`);
  const into = `INSERT OR IGNORE INTO ${WRITTEN} (tbl, key, pre)`;
  const row = (p: string) => sqliteRowObject(p, cols);
  const key = (p: string) => sqliteRowObject(p, keys);
  const at = (p: string) => keys.map((k) => `x.${quoteIdent(k)} = ${p}${quoteIdent(k)}`).join(' AND ');
  // The row already at NEW's key is about to be replaced (INSERT OR REPLACE, upsert, UPDATE onto a key).
  const displaced = `${into} SELECT ${lit(table)}, ${key('x.')}, ${row('x.')} FROM ${T} AS x WHERE ${at('NEW.')};`;
  const created = `${into} VALUES (${lit(table)}, ${key('NEW.')}, NULL);`;
  const old = `${into} VALUES (${lit(table)}, ${key('OLD.')}, ${row('OLD.')});`;
  return [
    `CREATE TEMP TRIGGER ${name('bi')} BEFORE INSERT ON ${T} BEGIN ${displaced} END;`,
    `CREATE TEMP TRIGGER ${name('ai')} AFTER INSERT ON ${T} BEGIN ${created} END;`,
    `CREATE TEMP TRIGGER ${name('bu')} BEFORE UPDATE ON ${T} BEGIN ${old} ${displaced} END;`,
    `CREATE TEMP TRIGGER ${name('au')} AFTER UPDATE ON ${T} BEGIN ${created} END;`,
    `CREATE TEMP TRIGGER ${name('bd')} BEFORE DELETE ON ${T} BEGIN ${old} END;`,
  ].join('\n');
}

export const SQLITE_WRITTEN_DDL = `CREATE TABLE IF NOT EXISTS main.${WRITTEN} (tbl TEXT NOT NULL, key TEXT NOT NULL, pre TEXT, PRIMARY KEY (tbl, key))`;

/**
 * pg: BEFORE UPDATE/DELETE records OLD; AFTER INSERT/UPDATE records NEW's key as created. AFTER row triggers run
 * at the end of the statement, after every BEFORE trigger of it, so a key another row moves onto keeps the
 * pre-image its own BEFORE trigger recorded. The key columns come as trigger arguments.
 */
export function pgTrackingDdl(boothSchema: string): string[] {
  const S = quoteIdent(boothSchema);
  return [
    `CREATE TABLE ${S}.${WRITTEN} (tbl TEXT NOT NULL, key TEXT NOT NULL, pre TEXT, PRIMARY KEY (tbl, key))`,
    `CREATE FUNCTION ${S}."_jukebox_track"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $jbx$
DECLARE r jsonb; k jsonb := '{}'::jsonb; i int;
BEGIN
  IF TG_WHEN = 'BEFORE' THEN r := to_jsonb(OLD); ELSE r := to_jsonb(NEW); END IF;
  FOR i IN 0 .. TG_NARGS - 1 LOOP k := k || jsonb_build_object(TG_ARGV[i], r -> TG_ARGV[i]); END LOOP;
  INSERT INTO ${S}.${WRITTEN} (tbl, key, pre)
    VALUES (TG_TABLE_NAME, k::text, CASE WHEN TG_WHEN = 'BEFORE' THEN r::text END) ON CONFLICT DO NOTHING;
  IF TG_WHEN = 'AFTER' THEN RETURN NULL; ELSIF TG_OP = 'DELETE' THEN RETURN OLD; ELSE RETURN NEW; END IF;
END $jbx$`,
  ];
}

export function pgTableTrackingDdl(
  shadowSchema: string,
  table: string,
  keys: readonly string[],
  boothSchema: string,
): string[] {
  const S = quoteIdent(shadowSchema);
  const B = quoteIdent(boothSchema);
  const args = keys.map(lit).join(', ');
  const on = `${S}.${quoteIdent(table)}`;
  return [
    `CREATE TRIGGER "_jukebox_before" BEFORE UPDATE OR DELETE ON ${on} FOR EACH ROW EXECUTE FUNCTION ${B}."_jukebox_track"(${args})`,
    `CREATE TRIGGER "_jukebox_after" AFTER INSERT OR UPDATE ON ${on} FOR EACH ROW EXECUTE FUNCTION ${B}."_jukebox_track"(${args})`,
  ];
}
