import { crossRealmError, JukeboxError } from '../errors';

/** Another process held a lock file (a tape's, a booth manifest's) longer than the waiter waits; its owner is stuck. */
export class TapeLockTimeoutError extends JukeboxError {
  readonly lockFile: string;
  readonly owner: string;
  constructor(lockFile: string, owner: string, waitedMs: number) {
    super(
      'TAPE_LOCK_TIMEOUT',
      `waited ${waitedMs} ms for the lock file ${lockFile}, held by ${owner || 'an unknown owner'}; ` +
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

/** The object store refused or failed a request; the message names the endpoint and object and what to check. */
export class ObjectStoreError extends JukeboxError {
  readonly endpoint: string;
  readonly object: string;
  readonly status: number | undefined;
  constructor(endpoint: string, object: string, what: string, status: number | undefined, cause: unknown) {
    const why = cause instanceof Error ? cause.message || cause.name : String(cause);
    const hint =
      status === 403 || status === 401
        ? 'check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY'
        : status === 404
          ? 'check the bucket in JUKEBOX_TAPE_STORE exists (and, for segments, that nobody deleted them)'
          : 'check that JUKEBOX_S3_ENDPOINT answers';
    super(
      'OBJECT_STORE_FAILED',
      `could not ${what} ${object} on ${endpoint}${status ? ` (HTTP ${status})` : ''}: ${why}; ${hint}`,
      // Retryable: a store that is down or throttling may answer the next attempt.
      { cause, nonRetryable: false },
    );
    this.endpoint = endpoint;
    this.object = object;
    this.status = status;
  }
}
crossRealmError('ObjectStoreError', ObjectStoreError);

/** A tape's segments in the object store do not line up (a gap, an overlap, a foreign key): nothing is repaired. */
export class TapeSegmentsError extends JukeboxError {
  readonly tape: string;
  constructor(tape: string, problem: string) {
    super(
      'TAPE_SEGMENTS_INVALID',
      `tape ${tape}: ${problem}; the segments were left as found, copy them aside before investigating`,
      { nonRetryable: true },
    );
    this.tape = tape;
  }
}
crossRealmError('TapeSegmentsError', TapeSegmentsError);

/** Writers of one tape on several hosts kept overtaking each other; the step is retried later by Temporal. */
export class TapeContentionError extends JukeboxError {
  constructor(tape: string, attempts: number) {
    super(
      'TAPE_CONTENTION',
      `tape ${tape}: ${attempts} attempts to append lost the race to other writers of the same run; ` +
        'Temporal retries the step; if this persists, check that worker clocks and the object store are healthy',
      { nonRetryable: false },
    );
  }
}
crossRealmError('TapeContentionError', TapeContentionError);

/** A tape store setting in the environment is malformed; the message names the variable and a valid form. */
export class TapeStoreConfigError extends JukeboxError {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super('TAPE_STORE_CONFIG', `${variable} ${problem}`, { nonRetryable: true });
    this.variable = variable;
  }
}
crossRealmError('TapeStoreConfigError', TapeStoreConfigError);
