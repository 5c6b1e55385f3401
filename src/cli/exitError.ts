// The class alone: the errors index also loads Temporal's failure types, a tenth of a second of start-up.
import { crossRealmError, JukeboxError } from '../errors/JukeboxError';

/** Documented exit codes of `jbx`: see src/cli/README.md. */
export const ExitCode = { ok: 0, failed: 1, usage: 2, tapeDamaged: 3 } as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** Handlers throw this; only the entry point turns it into a process exit. */
export class ExitError extends JukeboxError {
  readonly exitCode: ExitCodeValue;
  constructor(exitCode: ExitCodeValue, message: string, cause?: unknown) {
    super(exitCode === ExitCode.usage ? 'CLI_USAGE' : 'CLI_FAILED', message, { cause, nonRetryable: true });
    this.exitCode = exitCode;
  }
}
crossRealmError('ExitError', ExitError);

export const usageError = (message: string) => new ExitError(ExitCode.usage, message);
