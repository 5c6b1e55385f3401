import { SymbolBasedInstanceOfError } from '@temporalio/common/lib/type-helpers';

export interface JukeboxErrorOptions {
  cause?: unknown;
  /** When true, Temporal must not retry the step that threw this error: retrying cannot fix it. */
  nonRetryable?: boolean;
}

/**
 * Base of every error Jukebox throws on purpose. `code` is stable across releases (match on it, not on the
 * message); the message says what went wrong and what to do next.
 */
export class JukeboxError extends Error {
  readonly code: string;
  readonly nonRetryable: boolean;

  constructor(code: string, message: string, options: JukeboxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.nonRetryable = options.nonRetryable ?? false;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/**
 * Makes `instanceof` work for an error class across the workflow sandbox (a separate V8 realm) and across two
 * copies of this package, the way Temporal's own errors do.
 */
export function crossRealmError<T extends Error>(
  markerName: string,
  clazz: new (...args: never[]) => T,
): void {
  SymbolBasedInstanceOfError<T>(markerName)(clazz as never);
}

crossRealmError('JukeboxError', JukeboxError);
