import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/** The experiment cannot run as asked (no change, no runs, a bad gate parameter); nothing was started. */
export class ExperimentRequestError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('EXPERIMENT_INVALID', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ExperimentRequestError', ExperimentRequestError);

/**
 * The state file cannot be resumed: it belongs to another experiment (other change or other runs), or it is not
 * an experiment state file. Nothing in it was changed.
 */
export class ExperimentStateError extends JukeboxError {
  constructor(file: string, reason: string) {
    super(
      'EXPERIMENT_STATE_MISMATCH',
      `${file}: ${reason}; pass another --state file, or delete this one to start the experiment over`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('ExperimentStateError', ExperimentStateError);
