/**
 * What differs between SQLite and PostgreSQL: how a shadow is made (a file copy vs a schema copy), how tables
 * are listed and fingerprinted, how undo images are taken and restored. Everything else in StagedSql is shared.
 */
import type { Knex } from 'knex';
import { quoteIdent } from './quoting';
import type { Client } from './statement';
import type { Encoded } from './values';

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
  /** The rows the run's writes touched on the shadow, recorded by the tracking triggers (src/booth/sql/rowTracking.ts). */
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

/** The booth's own tables in a shadow and in the real database; never the agent's. */
export const TABLES_LOG = '_jukebox_log';
export const INTERNAL = '_jukebox_';
