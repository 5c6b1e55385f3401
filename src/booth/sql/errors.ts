import { crossRealmError, JukeboxError } from '../../errors';

/** Why a statement was refused before it ran; stable tags so callers need not parse messages. */
export type SqlRefusal =
  | 'empty'
  | 'unterminated'
  | 'multiple-statements'
  | 'transaction-control'
  | 'attach'
  | 'vacuum'
  | 'load-extension'
  | 'pragma'
  | 'file-access'
  | 'session-setting'
  | 'schema-qualified'
  | 'internal-table'
  | 'privileges'
  | 'code-execution'
  /** The database refused it: the run's role (pg) or its compiled program (SQLite) reaches past the shadow. */
  | 'outside-shadow'
  /** SQLite: temporary objects would live on the booth's connection, not in the staged database. */
  | 'temporary-object';

/**
 * The statement would reach outside the shadow (another file, another schema, the server's disk, the booth's
 * own tables) or break it; nothing ran, nothing changed. `object` names what it reached for when known.
 */
export class SqlRefusedError extends JukeboxError {
  readonly statement: string;
  readonly reason: SqlRefusal;
  readonly object: string | null;
  constructor(
    statement: string,
    reason: SqlRefusal,
    detail: string,
    object: string | null = null,
    cause?: unknown,
  ) {
    super(
      'SQL_REFUSED',
      `SQL statement refused (${reason}${object === null ? '' : `, ${JSON.stringify(object)}`}): ${detail}`,
      { nonRetryable: true, cause },
    );
    this.statement = statement;
    this.reason = reason;
    this.object = object;
  }
}
crossRealmError('SqlRefusedError', SqlRefusedError);

/**
 * A statement ran longer than the booth's statement time limit and was stopped (PostgreSQL statement_timeout,
 * SQLite interrupt); nothing of it is staged. Inside a tool step on SQLite the stop also rolls back the step's
 * earlier statements, so the step fails as a whole (see `stepLost`).
 */
export class SqlStatementTimeoutError extends JukeboxError {
  readonly statement: string;
  readonly timeoutMs: number;
  /** True when the step's earlier statements were rolled back with it: the step must fail and run again. */
  readonly stepLost: boolean;
  constructor(statement: string, timeoutMs: number, stepLost: boolean, cause?: unknown) {
    super(
      'SQL_STATEMENT_TIMEOUT',
      `SQL statement ran longer than ${timeoutMs} ms and was stopped, nothing of it was staged${
        stepLost
          ? " (and the step's earlier statements were rolled back with it: the step has to run again)"
          : ''
      }; make it cheaper, bound it (LIMIT, a WHERE on an index), or raise the booth's sql.statementTimeoutMs`,
      { cause, nonRetryable: true },
    );
    this.statement = statement;
    this.timeoutMs = timeoutMs;
    this.stepLost = stepLost;
  }
}
crossRealmError('SqlStatementTimeoutError', SqlStatementTimeoutError);

/**
 * commit() re-checked the run's statement log and found a statement the booth would have refused: it was not
 * staged through the booth (someone wrote the log behind its back). Nothing was applied.
 */
export class SqlTamperedError extends JukeboxError {
  readonly statement: string;
  readonly object: string | null;
  constructor(seq: number, refusal: SqlRefusedError) {
    super(
      'SQL_STAGING_TAMPERED',
      `SQL commit aborted, nothing was applied: statement ${seq} of the run's log, ${JSON.stringify(refusal.statement.slice(0, 200))}, is one the booth refuses (${refusal.message}); it was not staged through the booth, so the log was written behind its back: roll the run back and find out who can write its staging`,
      { cause: refusal, nonRetryable: true },
    );
    this.statement = refusal.statement;
    this.object = refusal.object;
  }
}
crossRealmError('SqlTamperedError', SqlTamperedError);

/** The database rejected the statement on the shadow; the staged state is unchanged (it ran in a rolled-back transaction). */
export class SqlStatementError extends JukeboxError {
  readonly statement: string;
  constructor(statement: string, cause: unknown) {
    super(
      'SQL_STATEMENT_FAILED',
      `SQL statement failed on the shadow, nothing was staged: ${cause instanceof Error ? cause.message : String(cause)}; fix the statement and run it again`,
      { cause, nonRetryable: true },
    );
    this.statement = statement;
  }
}
crossRealmError('SqlStatementError', SqlStatementError);

/** A row a conflict is about: its table and its primary key as `col=value, ...`. */
export interface SqlConflictRow {
  table: string;
  key: string;
}

export interface SqlConflictDetail {
  /** Rows (by primary key) whose real contents differ from what the run started from (commit) or wrote (compensate). */
  rows?: SqlConflictRow[];
  /** Tables compared whole (no primary key, changed by DDL, or triggers/views present) that changed. */
  wholeTables?: string[];
  /** A statement the run ran whose result on the real database is not the one the run saw. */
  statement?: string;
  /** How that statement's result differs. */
  statementDetail?: string;
}

/**
 * Rows this run read or wrote changed in the real database since its snapshot (commit), or rows a commit wrote
 * changed since that commit (compensate); nothing was applied. `tables` names every table involved.
 */
export class SqlConflictError extends JukeboxError {
  readonly tables: string[];
  readonly rows: SqlConflictRow[];
  readonly wholeTables: string[];
  readonly statement: string | null;
  constructor(tables: string[], what: 'commit' | 'compensate', detail: SqlConflictDetail = {}) {
    const rows = detail.rows ?? [];
    const whole = detail.wholeTables ?? (rows.length === 0 && detail.statement === undefined ? tables : []);
    const parts: string[] = [];
    if (rows.length > 0)
      parts.push(
        `row${rows.length === 1 ? '' : 's'} ${rows
          .slice(0, 10)
          .map((r) => `${r.table} (${r.key})`)
          .join(', ')}${rows.length > 10 ? ` and ${rows.length - 10} more` : ''}`,
      );
    if (whole.length > 0)
      parts.push(
        `table${whole.length === 1 ? '' : 's'} ${whole.join(', ')} (compared whole: no primary key, changed by DDL, or triggers/views present)`,
      );
    const changed = parts.length > 0 ? `${parts.join(' and ')} changed` : '';
    const stmt =
      detail.statement === undefined
        ? ''
        : `${changed === '' ? '' : '; '}the statement ${JSON.stringify(detail.statement)} ${detail.statementDetail ?? 'gives another result'} on the real database`;
    super(
      'SQL_CONFLICT',
      what === 'commit'
        ? `SQL commit aborted, nothing was applied: ${changed}${changed !== '' && stmt === '' ? " in the real database since the run's snapshot" : ''}${stmt}; the run's staged work is still staged: discard() it and re-run the agent on today's data`
        : `SQL compensation aborted, nothing was undone: ${changed}${changed !== '' && stmt === '' ? ' since the commit' : ''}${stmt}; undoing it now would overwrite those later changes, reconcile by hand`,
      { nonRetryable: true },
    );
    this.tables = tables;
    this.rows = rows;
    this.wholeTables = whole;
    this.statement = detail.statement ?? null;
  }
}
crossRealmError('SqlConflictError', SqlConflictError);

/**
 * Replaying the staged statements on the real database did not produce the state the shadow holds (a
 * non-deterministic statement, a constraint the shadow lacks); the transaction was rolled back.
 */
export class SqlReplayDivergedError extends JukeboxError {
  readonly tables: string[];
  constructor(tables: string[], cause?: unknown) {
    super(
      'SQL_REPLAY_DIVERGED',
      `SQL commit aborted, nothing was applied: replaying the staged statements on the real database ${
        cause === undefined
          ? `gave different contents for ${tables.join(', ')} than the shadow`
          : `failed (${cause instanceof Error ? cause.message : String(cause)})`
      }; avoid non-deterministic values (random(), now()) in writes or pass them as parameters, then stage again`,
      { cause, nonRetryable: true },
    );
    this.tables = tables;
  }
}
crossRealmError('SqlReplayDivergedError', SqlReplayDivergedError);

/** StagedSql was opened with options it cannot use, or its staging directory belongs to another database. */
export class SqlConfigError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('SQL_CONFIG', message, { cause, nonRetryable: true });
  }
}
crossRealmError('SqlConfigError', SqlConfigError);

/** An applied commit cannot be undone as asked (never applied, or it changed the schema). */
export class SqlCompensationError extends JukeboxError {
  readonly commitId: string;
  constructor(commitId: string, detail: string) {
    super('SQL_COMPENSATION', `cannot compensate SQL commit ${commitId}: ${detail}`, { nonRetryable: true });
    this.commitId = commitId;
  }
}
crossRealmError('SqlCompensationError', SqlCompensationError);

/** The real database failed during commit for a reason that may pass (busy, connection lost); nothing was applied. */
export class SqlCommitFailedError extends JukeboxError {
  constructor(cause: unknown) {
    super(
      'SQL_COMMIT_FAILED',
      `SQL commit failed and was rolled back, nothing was applied: ${cause instanceof Error ? cause.message : String(cause)}; retry the commit`,
      { cause, nonRetryable: false },
    );
  }
}
crossRealmError('SqlCommitFailedError', SqlCommitFailedError);
