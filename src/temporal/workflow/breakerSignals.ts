/** The breaker's Temporal messages. Types and names only: both the workflow bundle and clients import this. */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { TrackSnapshot } from '../../breaker/loopBreaker';
import type { BreakerTrip } from '../../breaker/trip';

/**
 * A human (or supervising agent) decides what an open breaker does: `resume` closes it, optionally with a new
 * per-track cap, and clears the tripped track's window; `abort` fails the run at once.
 */
export type BreakerDecision =
  | { decision: 'resume'; capUsd?: number; by?: string; note?: string }
  | { decision: 'abort'; by?: string; note?: string };

export const breakerCloseSignal = defineSignal<[BreakerDecision]>('jukebox.breaker.close');

export interface BreakerStatus {
  open: boolean;
  trip?: BreakerTrip;
  trips: number;
  resumed: number;
  capUsd: number;
  tracks: TrackSnapshot[];
  /** Detectors that could not run on some message (e.g. the embedder failed), and why. */
  degraded: string[];
}

export const breakerStatusQuery = defineQuery<BreakerStatus>('jukebox.breaker.status');
