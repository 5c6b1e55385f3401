import { loadPriceBook, type PriceBook } from '../llm/pricing';
import type { LlmRequest, LlmResponse, StreamChunk } from '../llm/types';
import { currentActivityTape } from '../recorder/activityTape';
import { BreakerTrippedError } from './errors';
import { type StreamBudget, StreamGuard } from './streamGuard';
import type { BreakerTrip } from './trip';

let processBook: PriceBook | undefined;

/** Writes the trip onto the step's tape (a breaker.trip frame, flushed with the step's error). */
export function recordTrip(trip: BreakerTrip): void {
  currentActivityTape()?.effect('breaker.trip', () => ({
    detector: trip.detector,
    track: trip.track,
    reason: trip.reason,
    evidence: trip.evidence,
    spend: { usd: trip.spendUsd },
  }));
}

/**
 * Runs one model call under a track's cost cap: checks the prompt before sending, each chunk as it arrives,
 * and on a trip aborts the HTTP stream (the provider stops generating and billing), records the trip and
 * throws BreakerTrippedError. Without a budget the call runs as it would anyway.
 */
export async function guardStream(
  budget: StreamBudget | undefined,
  request: LlmRequest,
  outer: AbortSignal,
  run: (signal: AbortSignal, watch: (chunk: StreamChunk) => void) => Promise<LlmResponse>,
  priceBook?: PriceBook,
): Promise<LlmResponse> {
  if (!budget) return run(outer, () => {});
  if (!priceBook) processBook ??= loadPriceBook();
  const book = priceBook ?? (processBook as PriceBook);
  const guard = new StreamGuard(budget, book.priceOf(request.provider, request.model), request);
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(outer.reason);
  outer.addEventListener('abort', onOuterAbort, { once: true });
  try {
    const before = guard.check();
    if (before) throw new BreakerTrippedError(before);
    return await run(controller.signal, (chunk) => {
      const trip = guard.onChunk(chunk);
      if (!trip) return;
      controller.abort(new BreakerTrippedError(trip));
      // Thrown inside the SDK's stream loop: it stops reading, and the abort closes the connection.
      throw new BreakerTrippedError(trip);
    });
  } catch (err) {
    if (!guard.tripped) throw err;
    recordTrip(guard.tripped);
    // The SDK may wrap what onChunk threw (or report the abort instead); the trip is what happened.
    throw err instanceof BreakerTrippedError ? err : new BreakerTrippedError(guard.tripped, err);
  } finally {
    outer.removeEventListener('abort', onOuterAbort);
  }
}
