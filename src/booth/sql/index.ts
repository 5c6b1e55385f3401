/**
 * SQL staging for the Shadow Booth: `StagedSql` runs statements through knex against a shadow of a SQLite file
 * or a PostgreSQL schema and applies them to the real database in one checked transaction on commit().
 */
export {
  SqlCommitFailedError,
  SqlCompensationError,
  SqlConfigError,
  type SqlConflictDetail,
  SqlConflictError,
  type SqlConflictRow,
  type SqlRefusal,
  SqlRefusedError,
  SqlReplayDivergedError,
  SqlStatementError,
  SqlStatementTimeoutError,
  SqlTamperedError,
} from './errors';
export {
  type SqlCommitResult,
  type SqlCompensateResult,
  type SqlQueryResult,
  type SqlWriteSet,
  StagedSql,
  type StagedSqlOptions,
  type StagedStatement,
} from './stagedSql';
export { type AnalyzedStatement, analyze, type Client as SqlClient } from './statement';
export { decodeBindings, decodeValue, type Encoded, encodeBindings, encodeValue } from './values';
