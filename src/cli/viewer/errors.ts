import { crossRealmError, JukeboxError } from '../../errors';

/** The viewer could not listen: the port is taken (or not ours to use). */
export class ViewerListenError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('VIEWER_LISTEN_FAILED', message, { cause, nonRetryable: true });
  }
}
crossRealmError('ViewerListenError', ViewerListenError);
