import { crossRealmError, JukeboxError } from '../errors';

/** No tape of the run appeared in the folder a follower watches within the time it waits for one. */
export class RunTapeNotFoundError extends JukeboxError {
  readonly workflowId: string;
  readonly dir: string;
  constructor(workflowId: string, dir: string, waitedMs: number) {
    super(
      'RUN_TAPE_NOT_FOUND',
      `no tape of workflow ${workflowId} appeared in ${dir} within ${waitedMs} ms; check the workflow id, and that ` +
        'the follower reads the folder its workers record into (JUKEBOX_TAPE_DIR, or the tapesDir option)',
      { nonRetryable: false },
    );
    this.workflowId = workflowId;
    this.dir = dir;
  }
}
crossRealmError('RunTapeNotFoundError', RunTapeNotFoundError);

/** A follower was given options it cannot follow a run with: the message says which and what to pass. */
export class FollowOptionsError extends JukeboxError {
  constructor(detail: string) {
    super('FOLLOW_OPTIONS_INVALID', detail, { nonRetryable: true });
  }
}
crossRealmError('FollowOptionsError', FollowOptionsError);
