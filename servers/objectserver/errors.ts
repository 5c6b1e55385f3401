import { crossRealmError, JukeboxError } from '../../src/errors';

/** Building, starting or reaching the S3-compatible test server failed; the message says which and where. */
export class ObjectServerError extends JukeboxError {
  constructor(problem: string, logFile?: string, cause?: unknown) {
    super('OBJECT_SERVER', `${problem}${logFile ? ` (log: ${logFile})` : ''}`, { cause, nonRetryable: true });
  }
}
crossRealmError('ObjectServerError', ObjectServerError);
