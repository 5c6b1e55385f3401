import { crossRealmError, JukeboxError } from '../errors';
import { type BreakerTrip, formatUsd } from './trip';

/**
 * The breaker opened on a track: the run is looping or spending too fast. Non-retryable: running the same
 * step again would loop or spend the same way. `trip` holds the detector, its evidence, the track and the spend.
 */
export class BreakerTrippedError extends JukeboxError {
  constructor(
    readonly trip: BreakerTrip,
    cause?: unknown,
  ) {
    super(
      'BREAKER_TRIPPED',
      `Circuit breaker tripped on track "${trip.track}" by the ${trip.detector} detector: ${trip.reason} ` +
        `(track spend $${formatUsd(trip.spendUsd)}). Inspect the breaker.trip frame on the tape; to go on, ` +
        'signal jukebox.breaker.close with a new cap or a human decision while the run waits (resumeWindowMs).',
      { cause, nonRetryable: true },
    );
  }

  /** Carried in the Temporal failure's details, so the workflow (and clients) get the trip, not only a message. */
  get failureDetails(): Record<string, unknown> {
    return { trip: this.trip };
  }
}
crossRealmError('BreakerTrippedError', BreakerTrippedError);

/** A breaker configuration that cannot be enforced (a cap that is not a positive number, a bad threshold). */
export class BreakerConfigError extends JukeboxError {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(
      'BREAKER_CONFIG_INVALID',
      `Breaker configuration ${field} ${problem}. Fix it before starting the run: the breaker never falls back to "unlimited".`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('BreakerConfigError', BreakerConfigError);
