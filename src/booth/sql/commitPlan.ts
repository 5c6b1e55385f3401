/**
 * How commit() checks one session: which tables row by row and which whole, the stored undo and after images,
 * and the order-insensitive hash of a read's result that commit compares.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Dialect, RowImage, WrittenRow } from './dialect';
import type { LoggedStatement, Session } from './sessionState';
import { type Encoded, encodeValue } from './values';

export function rowCount(fp: string): number | null {
  return fp === 'absent' ? null : Number(fp.split(':')[0]);
}

/** Order-insensitive: the same rows read back from another physical layout must compare equal. */
export function resultHash(rows: readonly Record<string, unknown>[]): string {
  const lines = rows.map((r) => JSON.stringify(encodeValue(r))).sort();
  return `${rows.length}:${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
}

/** Statements whose rowsAffected is a real count on both databases (SQLite's changes() is stale after DDL). */
export const COUNTED_VERBS = new Set(['insert', 'update', 'delete', 'replace', 'merge', 'with']);
/** Reads whose results are rows of tables, re-run at commit. */
export const RECHECKED_READS = new Set(['select', 'with', 'values']);
/** Statements after which a table's rows cannot be matched to the snapshot's by key. */
export const SCHEMA_VERBS = new Set(['create', 'drop', 'alter', 'truncate']);

/** What `_jukebox_commits` keeps per commit, for both `undo` (before) and `after`. */
export interface StoredImages {
  format: 2;
  /** Tables compared whole: full contents (undo), fingerprint (after); null/absent when the table did not exist. */
  tables: Record<string, Encoded | null>;
  /** Row-tracked tables: the written rows by key, before the commit (undo) or after it (after); null: absent. */
  rows: Record<string, RowImage[]>;
}

export function parseImages(json: string): StoredImages {
  const v = JSON.parse(json) as StoredImages | Record<string, Encoded | null>;
  if ((v as StoredImages).format === 2) return v as StoredImages;
  // Written by the table-level version: every entry is a whole table.
  return { format: 2, tables: v as Record<string, Encoded | null>, rows: {} };
}

/** How commit() checks one session, worked out from the shadow before the real transaction opens. */
export interface CommitPlan {
  touched: string[];
  whole: string[];
  shadowAfter: Record<string, string>;
  /** Row-tracked tables: each written key, its pre-image, and the shadow's row now. */
  rows: Map<string, { key: string; pre: string | null; shadow: string | null }[]>;
}

/**
 * Which tables commit() checks row by row and which whole. Row by row: tables that existed at the snapshot,
 * still exist, have a primary key and no DDL touched them, when the database has no triggers or views (those
 * can write tables a statement does not name). Tables only read need no table check: their reads are re-run.
 */
export async function planCommit(
  d: Dialect,
  shadow: Knex,
  s: Session,
  log: LoggedStatement[],
): Promise<CommitPlan> {
  const shadowTables = new Set(await d.listTables(shadow));
  const known = new Set([...Object.keys(s.base), ...shadowTables]);
  const written: WrittenRow[] = await d.writtenRows(shadow, s);
  const named = new Set(log.flatMap((x) => x.names).filter((n) => known.has(n)));
  const writtenTables = new Set(
    log.filter((x) => x.kind === 'write').flatMap((x) => x.names.filter((n) => known.has(n))),
  );
  // Foreign-key cascades write tables the statement does not name; the triggers saw them.
  for (const r of written) {
    if (!known.has(r.table)) continue;
    named.add(r.table);
    writtenTables.add(r.table);
  }
  const touched = s.indirection ? [...known].sort() : [...named].sort();
  const schemaChanged = new Set(log.filter((x) => SCHEMA_VERBS.has(x.verb)).flatMap((x) => x.names));
  const byTable = new Map<string, WrittenRow[]>();
  for (const r of written) byTable.set(r.table, [...(byTable.get(r.table) ?? []), r]);
  const whole: string[] = [];
  const rows: CommitPlan['rows'] = new Map();
  for (const t of touched) {
    if (!s.indirection && !writtenTables.has(t)) continue;
    const tracked =
      !s.indirection &&
      t in s.base &&
      shadowTables.has(t) &&
      !schemaChanged.has(t) &&
      (await d.keyColumns(shadow, t)) !== null &&
      !(byTable.get(t) ?? []).some((r) => d.keyHasNull(r.key));
    if (!tracked) {
      whole.push(t);
      continue;
    }
    const keyed = byTable.get(t) ?? [];
    const now = await d.rowImages(
      shadow,
      t,
      keyed.map((r) => r.key),
    );
    rows.set(
      t,
      keyed.map((r, i) => ({ key: r.key, pre: r.pre, shadow: now[i] ?? null })),
    );
  }
  const shadowAfter: Record<string, string> = {};
  for (const t of whole) shadowAfter[t] = await d.fingerprint(shadow, t);
  return { touched, whole, shadowAfter, rows };
}
