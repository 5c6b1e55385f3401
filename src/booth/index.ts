/**
 * The Shadow Booth: agents' side effects held in escrow until code commits them. Today that is the file part,
 * a copy-on-write staged workspace over a real directory with confined paths and a crash-safe journaled
 * commit (docs/shadow-booth.md); shell commands in a bubblewrap sandbox whose writes become staged changes
 * (`StagedShell`, src/booth/shell/); SQL through knex against a shadow with a checked, idempotent, compensable
 * commit (`StagedSql`, src/booth/sql/); MCP tool calls escrowed until commit (`McpEscrow`, src/booth/mcp/);
 * verifiers and policy gates over the change set; and `ShadowBooth`, one run's booth composing them, whose
 * tool steps stage exactly once (step checkpoints, src/booth/stepCheckpoint.ts).
 */
export {
  CommitConflictError,
  CommitPendingError,
  type EscapeReason,
  type FsCode,
  PathEscapeError,
  type PathRefusal,
  PathRefusedError,
  StagedBytesLimitError,
  StagingCorruptError,
  StepLogCorruptError,
  StepLogFormatError,
  StepLogTruncatedError,
  WorkspaceConfigError,
  WorkspaceFsError,
} from './errors';
export type { Base, Entry } from './manifest';
export * from './mcp';
export { MAX_NAME_BYTES, MAX_PATH_BYTES } from './paths';
export {
  BoothFiles,
  BoothNotConfiguredError,
  BoothRuntime,
  type BoothStatus,
  crashAtFromEnv,
  type FilesCommitReport,
  requireBooth,
  ShadowBooth,
  type ShadowBoothConfig,
} from './shadowBooth';
export {
  type ShellChange,
  ShellChangesRefusedError,
  ShellConfigError,
  ShellEnvironment,
  ShellIsolationUnavailableError,
  ShellLimitError,
  type ShellLimits,
  type ShellResult,
  type ShellRunOptions,
  ShellSpawnError,
  type ShellStatus,
  ShellTimeoutError,
  StagedShell,
  type StagedShellOptions,
} from './shell';
export {
  SqlCommitFailedError,
  type SqlCommitResult,
  type SqlCompensateResult,
  SqlCompensationError,
  SqlConfigError,
  SqlConflictError,
  type SqlQueryResult,
  type SqlRefusal,
  SqlRefusedError,
  SqlReplayDivergedError,
  SqlStatementError,
  SqlStatementTimeoutError,
  SqlTamperedError,
  type SqlWriteSet,
  StagedSql,
  type StagedSqlOptions,
  type StagedStatement,
} from './sql';
export {
  type Change,
  type ChangeOp,
  type CommitResult,
  DEFAULT_MAX_STAGED_BYTES,
  type NodeType,
  StagedWorkspace,
  type StagedWorkspaceOptions,
  type WorkspaceStat,
} from './stagedWorkspace';
export type { BoothStep, StepCheckpoint, StepStaging } from './stepCheckpoint';
export {
  type BoothChangeSet,
  filesOnlyUnder,
  type Gate,
  type GateContext,
  type GateDecision,
  type GateParams,
  GateRefusedError,
  GateUnknownError,
  type GateVerdict,
  mcpToolsAllowed,
  needsApproval,
  noFileDeletes,
  noSetIdModes,
  pass,
  refuse,
  requirePassed,
  runGates,
} from './verifiers';
