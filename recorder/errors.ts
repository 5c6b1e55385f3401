import { crossRealmError, JukeboxError } from '../errors';

/** Another process held a tape's lock for longer than the store waits; its owner is alive but stuck. */
export class TapeLockTimeoutError extends JukeboxError {
  readonly lockFile: string;
  readonly owner: string;
  constructor(lockFile: string, owner: string, waitedMs: number) {
    super(
      'TAPE_LOCK_TIMEOUT',
      `waited ${waitedMs} ms for the tape lock ${lockFile}, held by ${owner || 'an unknown owner'}; ` +
        'if that process is gone for good, delete the lock file',
      // Retryable: the holder is alive, so a later attempt can succeed.
      { nonRetryable: false },
    );
    this.lockFile = lockFile;
    this.owner = owner;
  }
}
crossRealmError('TapeLockTimeoutError', TapeLockTimeoutError);

/** Writing a step to its tape failed; the step fails too, so no step completes unrecorded. */
export class TapeRecordError extends JukeboxError {
  constructor(tapePath: string, what: string, cause: unknown, nonRetryable = false) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('TAPE_RECORD_FAILED', `could not record ${what} on tape ${tapePath}: ${why}`, {
      cause,
      nonRetryable,
    });
  }
}
crossRealmError('TapeRecordError', TapeRecordError);
