import { ApplicationFailure } from '@temporalio/common';
import type { JukeboxError } from './JukeboxError';

/**
 * The one mapping of a typed Jukebox error onto Temporal's failure model: `type` is the class name (usable in
 * `nonRetryableErrorTypes`), `nonRetryable` carries the error's retry semantics, details carry the stable code.
 */
export function toApplicationFailure(
  err: JukeboxError,
  options: { keepCause?: boolean } = {},
): ApplicationFailure {
  return ApplicationFailure.create({
    message: err.message,
    type: err.name,
    nonRetryable: err.nonRetryable,
    details: [{ code: err.code }],
    ...(options.keepCause ? { cause: err } : {}),
  });
}
