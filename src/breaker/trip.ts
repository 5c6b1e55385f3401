export type DetectorName =
  | 'exact-repeat'
  | 'tool-repeat'
  | 'semantic-repeat'
  | 'code-repeat'
  | 'spend-velocity'
  | 'cost-cap';

/** Why the breaker opened: what goes into the typed failure and the breaker.trip frame. */
export interface BreakerTrip {
  detector: DetectorName;
  track: string;
  reason: string;
  /** The matching messages (indexes in the track, short excerpts, scores), or the spend window. */
  evidence: Record<string, unknown>;
  /** USD spent by the track so far, the tripping step included as far as it streamed. */
  spendUsd: number;
}

export { formatUsd } from '../llm/pricing/formatUsd';
