// The failure module alone: the package index loads 40 more modules, at the start of every jbx command.
import { ApplicationFailure } from '@temporalio/common/lib/failure';
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
    // An error may add structured details (e.g. the breaker's trip), so workflows get more than a message.
    details: [{ code: err.code, ...(err as { failureDetails?: Record<string, unknown> }).failureDetails }],
    ...(options.keepCause ? { cause: err } : {}),
  });
}
