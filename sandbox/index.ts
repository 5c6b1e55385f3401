/**
 * The Shadow Booth: agents' side effects held in escrow until code commits them. Today that is the file part,
 * a copy-on-write staged workspace over a real directory with confined paths and a crash-safe journaled
 * commit (docs/shadow-booth.md). Shell, SQL and MCP staging come later.
 */
export {
  CommitConflictError,
  CommitPendingError,
  type EscapeReason,
  type FsCode,
  PathEscapeError,
  type PathRefusal,
  PathRefusedError,
  StagingCorruptError,
  WorkspaceConfigError,
  WorkspaceFsError,
} from './errors';
export type { Base, Entry } from './manifest';
export { MAX_NAME_BYTES, MAX_PATH_BYTES } from './paths';
export {
  type Change,
  type ChangeOp,
  type CommitResult,
  type NodeType,
  StagedWorkspace,
  type StagedWorkspaceOptions,
  type WorkspaceStat,
} from './stagedWorkspace';
