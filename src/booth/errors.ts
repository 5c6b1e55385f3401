import { crossRealmError, JukeboxError, quoted } from '../errors';

/** Why a path was refused; stable tags, finer than the error code, so callers need not parse messages. */
export type PathRefusal =
  | 'not-a-string'
  | 'empty'
  | 'nul-byte'
  | 'path-too-long'
  | 'name-too-long'
  | 'backslash'
  | 'windows-drive'
  | 'root'
  | 'staging-dir'
  | 'booth-owned'
  | 'symlink'
  | 'special-file'
  | 'hard-link';

export type EscapeReason = 'dotdot' | 'absolute-outside-root' | 'symlink-outside-root';

/** The path would reach outside the workspace root. Never retryable: the same path escapes every time. */
export class PathEscapeError extends JukeboxError {
  readonly path: string;
  readonly reason: EscapeReason;
  constructor(path: string, reason: EscapeReason, detail: string) {
    super(
      'PATH_ESCAPE',
      `path ${quoted(path)} leaves the workspace root (${reason}): ${detail}; use a path relative to the workspace root that stays inside it`,
      { nonRetryable: true },
    );
    this.path = path;
    this.reason = reason;
  }
}
crossRealmError('PathEscapeError', PathEscapeError);

/** The path stays inside the root but is one the booth will not touch (see docs/shadow-booth.md). */
export class PathRefusedError extends JukeboxError {
  readonly path: string;
  readonly reason: PathRefusal;
  constructor(path: string, reason: PathRefusal, detail: string) {
    super('PATH_REFUSED', `path ${quoted(path)} refused (${reason}): ${detail}`, {
      nonRetryable: true,
    });
    this.path = path;
    this.reason = reason;
  }
}
crossRealmError('PathRefusedError', PathRefusedError);

export type FsCode = 'ENOENT' | 'EEXIST' | 'ENOTDIR' | 'EISDIR' | 'ENOTEMPTY' | 'EINVAL';

/**
 * A file-system rule of the merged (real + staged) view was broken, e.g. reading a missing file. `fsCode` is the
 * POSIX name of the same condition so callers used to node:fs can match on it.
 */
export class WorkspaceFsError extends JukeboxError {
  readonly path: string;
  readonly fsCode: FsCode;
  constructor(path: string, fsCode: FsCode, detail: string) {
    super('WORKSPACE_FS', `${fsCode}: ${quoted(path)} ${detail}`, { nonRetryable: true });
    this.path = path;
    this.fsCode = fsCode;
  }
}
crossRealmError('WorkspaceFsError', WorkspaceFsError);

/** `StagedWorkspace.open` was given a root or staging directory it cannot safely use. */
export class WorkspaceConfigError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('WORKSPACE_CONFIG', message, { cause, nonRetryable: true });
  }
}
crossRealmError('WorkspaceConfigError', WorkspaceConfigError);

/** The staging area on disk is unreadable or inconsistent (hand-edited, another program, disk fault). */
export class StagingCorruptError extends JukeboxError {
  readonly file: string;
  constructor(file: string, detail: string, cause?: unknown) {
    super(
      'STAGING_CORRUPT',
      `staging file ${file} is unusable: ${detail}; inspect it, then discard() the staging area if it cannot be repaired`,
      { cause, nonRetryable: true },
    );
    this.file = file;
  }
}
crossRealmError('StagingCorruptError', StagingCorruptError);

/** A commit journal from an interrupted commit is on disk: the real tree is half-applied until it is finished. */
export class CommitPendingError extends JukeboxError {
  constructor(stagingDir: string, attempted: string) {
    super(
      'COMMIT_PENDING',
      `cannot ${attempted}: an interrupted commit journal is in ${stagingDir}; call recover() or commit() to finish it first (rollback is impossible once a commit has started)`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('CommitPendingError', CommitPendingError);

/** A real file under a staged path changed after it was staged; committing would overwrite someone's work. */
export class CommitConflictError extends JukeboxError {
  readonly paths: string[];
  constructor(paths: string[]) {
    super(
      'COMMIT_CONFLICT',
      `commit refused, nothing was written: the real ${paths.length === 1 ? 'entry' : 'entries'} ${paths
        .slice(0, 10)
        .map((p) => quoted(p))
        .join(
          ', ',
        )}${paths.length > 10 ? ` and ${paths.length - 10} more` : ''} changed since they were staged; re-read them and stage again, or discard(), or commit({ force: true }) to overwrite`,
      { nonRetryable: true },
    );
    this.paths = paths;
  }
}
crossRealmError('CommitConflictError', CommitConflictError);

/** Staging this would take the run's staged file bytes past the booth's limit; nothing of the call was staged. */
export class StagedBytesLimitError extends JukeboxError {
  /** The path whose write passed the limit, or null when a whole operation (a batch, a command) did. */
  readonly path: string | null;
  readonly limit: number;
  readonly attempted: number;
  constructor(path: string | null, limit: number, attempted: number, operation = 'operation') {
    super(
      'STAGED_BYTES_LIMIT',
      `${path === null ? `the ${operation}` : `staging ${quoted(path)}`} was refused, nothing of it was staged: the run's staged files would hold ${attempted} bytes, over the limit of ${limit} (files.maxStagedBytes in the booth config); stage less, delete staged files first, or raise the limit`,
      { nonRetryable: true },
    );
    this.path = path;
    this.limit = limit;
    this.attempted = attempted;
  }
}
crossRealmError('StagedBytesLimitError', StagedBytesLimitError);

/** The step log is shorter than its header: too few bytes (the header is written whole, never torn). */
export class StepLogTruncatedError extends JukeboxError {
  readonly file: string;
  constructor(file: string, size: number, needed: number) {
    super(
      'STEP_LOG_TRUNCATED',
      `step log ${file} has ${size} bytes, fewer than its ${needed}-byte header; it was cut short outside Jukebox: discard() the run's staging, or delete the file if the manifest alone is wanted`,
      { nonRetryable: true },
    );
    this.file = file;
  }
}
crossRealmError('StepLogTruncatedError', StepLogTruncatedError);

/** The step log is not one this version reads (bad magic, another version, non-zero reserved bytes). */
export class StepLogFormatError extends JukeboxError {
  readonly file: string;
  constructor(file: string, detail: string) {
    super(
      'STEP_LOG_FORMAT',
      `step log ${file} is not a Jukebox step log this version reads: ${detail}; open the run with the Jukebox version that wrote it, or discard() its staging`,
      { nonRetryable: true },
    );
    this.file = file;
  }
}
crossRealmError('StepLogFormatError', StepLogFormatError);

/** A step-log record before the end of the log is invalid: not a torn tail, so records after it cannot be trusted. */
export class StepLogCorruptError extends JukeboxError {
  readonly file: string;
  readonly offset: number;
  constructor(file: string, offset: number, detail: string, cause?: unknown) {
    super(
      'STEP_LOG_CORRUPT',
      `step log ${file} is corrupt at byte ${offset}: ${detail}; inspect it (docs/shadow-booth.md, "The step log"), then discard() the run's staging if it cannot be repaired`,
      { cause, nonRetryable: true },
    );
    this.file = file;
    this.offset = offset;
  }
}
crossRealmError('StepLogCorruptError', StepLogCorruptError);
