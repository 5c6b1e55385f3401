import { crossRealmError, JukeboxError } from '../../errors';

/** A model script does not have the shape the server needs: `field` is the path to the bad value. */
export class ModelScriptInvalidError extends JukeboxError {
  readonly source: string;
  readonly field: string;
  constructor(source: string, field: string, problem: string, cause?: unknown) {
    super(
      'MODEL_SCRIPT_INVALID',
      `Model script ${source} is invalid: ${field} ${problem}. Fix the script (see examples/sample/script.yaml for ` +
        'the format) and load it again.',
      { cause, nonRetryable: true },
    );
    this.source = source;
    this.field = field;
  }
}
crossRealmError('ModelScriptInvalidError', ModelScriptInvalidError);

/** The script file could not be read at all (missing, a directory, no permission). */
export class ModelScriptUnreadableError extends JukeboxError {
  constructor(file: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'MODEL_SCRIPT_UNREADABLE',
      `Cannot read model script ${file}: ${reason}. Check the path (relative paths resolve from ${process.cwd()}).`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ModelScriptUnreadableError', ModelScriptUnreadableError);

/** Another process (often a model server left running) already listens on the requested port. */
export class ModelServerPortInUseError extends JukeboxError {
  readonly port: number;
  constructor(host: string, port: number, cause: unknown) {
    super(
      'MODEL_SERVER_PORT_IN_USE',
      `Cannot start the model server: port ${port} on ${host} is already in use (a model server left running?). ` +
        'Stop whatever listens there, pick another port (--port N, or the port option), or use port 0 to let the ' +
        'OS choose a free one.',
      { cause, nonRetryable: true },
    );
    this.port = port;
  }
}
crossRealmError('ModelServerPortInUseError', ModelServerPortInUseError);

/** Listening failed for a reason other than a busy port (bad host, no permission for a low port, ...). */
export class ModelServerListenError extends JukeboxError {
  constructor(host: string, port: number, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'MODEL_SERVER_LISTEN_FAILED',
      `Cannot start the model server on ${host}:${port}: ${reason}. Use host 127.0.0.1 and a port above 1024 ` +
        '(or 0 for any free port).',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ModelServerListenError', ModelServerListenError);
