import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/** `jbx fork` / forkRun was asked for a fork that cannot exist; nothing was started, the parent is untouched. */
export class ForkRequestError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('FORK_INVALID', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ForkRequestError', ForkRequestError);

/**
 * A step before the fork point asked for something other than what the parent tape recorded, so it cannot be
 * answered from the tape: the agent code changed in a way that matters before the fork. Not retryable.
 */
export class ForkDivergenceError extends JukeboxError {
  constructor(step: number, parentTape: string, fields: string[]) {
    super(
      'FORK_INHERITED_STEP_DIVERGED',
      `step ${step} comes before the fork point, but its request differs from the parent tape ${parentTape} (${fields.join(', ')}). ` +
        'The agent code changed before the fork step: fork at an earlier step, or run `jbx replay` on the parent to see the divergence.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('ForkDivergenceError', ForkDivergenceError);

/** The parent tape changed since the fork was requested (its prefix no longer hashes to parent.tapeHash). */
export class ParentTapeChangedError extends JukeboxError {
  constructor(parentTape: string, expected: string, actual: string) {
    super(
      'FORK_PARENT_CHANGED',
      `parent tape ${parentTape} no longer matches the fork's parent.tapeHash (expected ${expected}, found ${actual}); ` +
        'fork again from the tape as it is now.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('ParentTapeChangedError', ParentTapeChangedError);

/**
 * The parent's staged SQL state cannot be rebuilt: its statements were recorded against a database whose tables
 * have changed since, and the tape holds the statements, not the parent's starting rows. Replaying them on
 * today's data would give a world the parent never saw, so the fork refuses. Not retryable.
 */
export class ForkWorldChangedError extends JukeboxError {
  constructor(parentTape: string, tables: string[]) {
    super(
      'FORK_WORLD_CHANGED',
      `the parent run ${parentTape} staged SQL against a database whose tables ${tables.join(', ')} have changed ` +
        'since; the tape holds its statements, not its starting rows, so its staged state cannot be restored. ' +
        'Restore the database to the state the parent started from, or fork at a step before its first SQL write.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('ForkWorldChangedError', ForkWorldChangedError);

/** A workflow history given for a tape is of another run, so its event ids say nothing about the tape's steps. */
export class HistoryMismatchError extends JukeboxError {
  constructor(tapeFile: string, historySource: string, problem: string) {
    super(
      'FORK_HISTORY_MISMATCH',
      `the history from ${historySource} does not belong to the tape ${tapeFile}: ${problem}. ` +
        'Pass the workflow id and run id of the run that recorded the tape (its header: `jbx show TAPE`), ' +
        'or remove the wrong stored history beside the tape so it is fetched again.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('HistoryMismatchError', HistoryMismatchError);
