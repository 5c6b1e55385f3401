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

/**
 * Where a session's shadow lives and, on PostgreSQL, the role its statements run as (a login role of its own,
 * with its password and the key of the booth's bookkeeping functions; kept in the 0600 state file).
 */
export interface ShadowRef {
  shadow: string;
  agent?: AgentAccess;
}

export interface AgentAccess {
  role: string;
  password: string;
  /** Proves to the booth's bookkeeping functions that the booth, not the agent, is calling (pg). */
  key: string;
}

/** What the statement log records of one statement. */
export interface LogRow {
  kind: 'read' | 'write';
  statement: string;
  params: string;
  rowsAffected: number;
  names: string;
  verb: string;
  result: string | null;
}

export interface ExecOptions {
  /** Stop the statement after this long (`SqlStatementTimeoutError`); none at commit. */
  timeoutMs?: number;
  /**
   * One commit's replay passes the same set to each of its statements, all in one transaction: the statement
   * texts (as sent, identifier bindings spliced) whose compiled programs already passed the booth's checks in
   * that transaction since its last schema change. Values bound to `?` do not change what a program opens or
   * calls, so the same text needs checking once (SQLite: one EXPLAIN, not one a statement).
   */
  checked?: Set<string>;
  /** The caller needs only rowsAffected (a replayed INSERT/UPDATE/DELETE/REPLACE), not the rows. */
  countOnly?: boolean;
}

export interface Dialect {
  readonly client: Client;
  /** Identifies the real database, so a stagingDir is never reused against another one. */
  readonly target: string;
  readonly real: Knex;
  /** Schema names a statement may not use as qualifiers. */
  forbiddenSchemas(): Promise<Set<string>>;
  /** Takes a consistent snapshot of the real database; returns where the shadow lives. */
  createShadow(sessionId: string, stagingDir: string): Promise<ShadowRef>;
  /** The booth's own connection to the shadow: bookkeeping, fingerprints, sequences. */
  openShadow(ref: ShadowRef): Knex;
  /**
   * The connection the agent's statements run on, confined by the database (pg: the session's role; SQLite:
   * the booth's connection, whose every statement is checked as compiled). May be `booth` itself.
   */
  openAgent(ref: ShadowRef, booth: Knex, options: ExecOptions): Knex;
  dropShadow(ref: ShadowRef): Promise<void>;
  /** False once dropShadow has run (or someone removed it): the session it belonged to has ended. */
  shadowExists(ref: ShadowRef): Promise<boolean>;
  /** The booth's table `name` (`_jukebox_log`, `_jukebox_steps`) of this shadow, qualified. */
  bookkeeping(ref: ShadowRef, name: string): string;
  /** Appends a statement's row to the log in the agent's open transaction; returns its seq. */
  logStatement(trx: Knex.Transaction, ref: ShadowRef, row: LogRow): Promise<number>;
  /** Inserts a step's checkpoint row in the agent's open transaction. */
  insertCheckpoint(
    trx: Knex.Transaction,
    ref: ShadowRef,
    id: string,
    attempt: number,
    result: string,
  ): Promise<void>;
  listTables(db: Db): Promise<string[]>;
  /** True when triggers or views exist, so a statement may touch tables it does not name. */
  hasIndirection(db: Db): Promise<boolean>;
  hasTable(db: Db, table: string): Promise<boolean>;
  fingerprint(db: Db, table: string): Promise<string>;
  /**
   * Runs one of the agent's statements (staging, or replaying at commit), refusing with `SqlRefusedError` what
   * the database says reaches past the shadow, and with `SqlStatementTimeoutError` what runs too long.
   */
  exec(db: Db, sql: string, bindings: unknown, write: boolean, options?: ExecOptions): Promise<ExecResult>;
  /**
   * Runs `fn` in a transaction on the real database that writes (commit, compensation), with the booth's
   * bookkeeping table in place when `fn` runs (SQLite: made before the transaction opens, so `lock` can be its
   * first statement; pg: the transaction's first statement).
   */
  writeTransaction<T>(fn: (trx: Knex.Transaction) => Promise<T>): Promise<T>;
  /** Makes other writers wait until this transaction ends (SQLite: the write lock; pg: table locks). */
  lock(trx: Knex.Transaction, tables: string[]): Promise<void>;
  /** lock() needs the names of the tables (pg); false: it ignores them (SQLite), so it may run before they are known. */
  readonly locksTables: boolean;
  image(trx: Knex.Transaction, table: string): Promise<Encoded>;
  restore(trx: Knex.Transaction, table: string, image: Encoded): Promise<void>;
  /** Where the shadow's sequences stand (pg: sequences are not transactional, a failed insert still moves them). */
  sequencePositions(shadow: Db): Promise<SequencePosition[]>;
  /** Puts sequences back where `sequencePositions` found them. */
  resetSequences(shadow: Db, positions: readonly SequencePosition[]): Promise<void>;
  /** Primary-key columns in key order; null when the table has none or does not exist. */
  keyColumns(db: Db, table: string): Promise<string[] | null>;
  /** The rows the run's writes touched on the shadow, recorded by the tracking triggers (src/booth/sql/rowTracking.ts). */
  writtenRows(shadow: Db, ref: ShadowRef): Promise<WrittenRow[]>;
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
