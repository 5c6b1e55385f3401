import { ActivityFailure, ApplicationFailure, condition, log, setHandler } from '@temporalio/workflow';
import type { BreakerConfig } from '../../breaker/config';
import { BreakerTrippedError } from '../../breaker/errors';
import type { DeferredEmbedding, MessageFeatures } from '../../breaker/features';
import { LoopBreaker, type LoopBreakerState, type StepSpend } from '../../breaker/loopBreaker';
import type { StreamBudget } from '../../breaker/streamGuard';
import type { BreakerTrip } from '../../breaker/trip';
import { type BreakerDecision, breakerCloseSignal, breakerStatusQuery } from './breakerSignals';

/** A WorkflowBreaker's state as plain data, carried into the next segment of a run that continues as new. */
export interface WorkflowBreakerState {
  breaker: LoopBreakerState;
  deferred: { track: string; step: number; index: number; text: string }[];
  trips: number;
  resumed: number;
  /** A decision signalled while no trip was open: the next trip's wait discards it, as it would have. */
  decision?: BreakerDecision;
}

/** The trip inside a failed llm step (the cost cap cut its stream), or undefined for any other failure. */
export function tripOf(err: unknown): BreakerTrip | undefined {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (!(failure instanceof ApplicationFailure) || failure.type !== 'BreakerTrippedError') return undefined;
  const details = failure.details?.[0] as { trip?: BreakerTrip } | undefined;
  return details?.trip;
}

/**
 * The circuit breaker as a workflow runs it, shared by every workflow that has one (agentWorkflow,
 * agentGroupWorkflow): the LoopBreaker's state, the jukebox.breaker.close signal and jukebox.breaker.status
 * query, and the trip path: record a breaker.trip frame, wait resumeWindowMs for a human decision, then resume
 * (new cap, cleared window) or throw BreakerTrippedError. How a trip is recorded (which activity, which step
 * number) is the workflow's: it passes `recordTrip`.
 */
export class WorkflowBreaker {
  private breaker: LoopBreaker | undefined;
  private decision: BreakerDecision | undefined;
  private openTrip: BreakerTrip | undefined;
  private resumeWindowMs = 0;
  /** Messages whose embedding the next model step brings back (MessageFeatures.embeddingDeferred). */
  private deferred: { track: string; step: number; index: number; text: string }[] = [];
  trips = 0;
  resumed = 0;
  /** Degradations already logged by this run: each once, not once per step. */
  private readonly warned = new Set<string>();

  constructor(private readonly recordTrip: (trip: BreakerTrip) => Promise<void>) {
    setHandler(breakerCloseSignal, (d) => {
      this.decision = d;
    });
    setHandler(breakerStatusQuery, () => ({
      open: this.openTrip !== undefined,
      ...(this.openTrip ? { trip: this.openTrip } : {}),
      trips: this.trips,
      resumed: this.resumed,
      capUsd: this.breaker?.capUsd ?? Number.NaN,
      tracks: this.breaker?.snapshot() ?? [],
      degraded: this.breaker?.degraded ?? [],
    }));
  }

  /** Arms the breaker with a resolved (checked) config. */
  start(config: BreakerConfig): LoopBreaker {
    this.resumeWindowMs = config.resumeWindowMs;
    this.breaker = new LoopBreaker(config);
    return this.breaker;
  }

  /** The state to carry into the run's next segment; the breaker is never open when a run continues. */
  saveState(): WorkflowBreakerState {
    return {
      breaker: this.armed.saveState(),
      deferred: this.deferred.map((d) => ({ ...d })),
      trips: this.trips,
      resumed: this.resumed,
      ...(this.decision ? { decision: this.decision } : {}),
    };
  }

  /** Takes up the state of the run's previous segment, after start(). */
  restoreState(state: WorkflowBreakerState): void {
    this.armed.restoreState(state.breaker);
    this.deferred = state.deferred.map((d) => ({ ...d }));
    this.trips = state.trips;
    this.resumed = state.resumed;
    this.decision = state.decision;
  }

  private get armed(): LoopBreaker {
    if (!this.breaker) throw new Error('WorkflowBreaker used before start()');
    return this.breaker;
  }

  /** The cost cap an llm step of this track enforces chunk by chunk. */
  budget(track: string): StreamBudget {
    const b = this.armed;
    return { track, spentUsd: b.spentUsd(track), capUsd: b.capUsd };
  }

  /** Opens the breaker; returns when a human resumed it, throws BreakerTrippedError when nobody did (or abort). */
  async onTrip(trip: BreakerTrip, alreadyRecorded: boolean): Promise<void> {
    const b = this.armed;
    this.trips++;
    this.openTrip = trip;
    log.warn('circuit breaker tripped', { detector: trip.detector, track: trip.track, reason: trip.reason });
    if (!alreadyRecorded) await this.recordTrip(trip);
    this.decision = undefined;
    if (this.resumeWindowMs > 0) await condition(() => this.decision !== undefined, this.resumeWindowMs);
    const d = this.decision as BreakerDecision | undefined;
    this.decision = undefined;
    if (d?.decision === 'resume') {
      if (d.capUsd !== undefined) b.setCap(d.capUsd);
      b.clearWindow(trip.track);
      this.openTrip = undefined;
      this.resumed++;
      log.info('circuit breaker closed by signal', { track: trip.track, capUsd: b.capUsd, by: d.by });
      return;
    }
    throw new BreakerTrippedError(trip);
  }

  /**
   * A failed llm step: when the cost cap cut its stream, what streamed counts against the track and the trip
   * path runs (returns: resumed, the caller may retry the step); any other failure is rethrown as it was.
   */
  async onStepFailure(err: unknown, track: string, startMs: number): Promise<void> {
    const trip = tripOf(err);
    if (!trip) throw err;
    const b = this.armed;
    b.observeSpend(track, {
      startMs,
      endMs: Date.now(),
      outputTokens: 0,
      usd: trip.spendUsd - b.spentUsd(track),
    });
    await this.onTrip(trip, true);
  }

  /** Logs a degradation the worker has not logged (a failed embedding, a parser error), once per run. */
  private warnDegraded(track: string, why: string): void {
    if (this.warned.has(why)) return;
    this.warned.add(why);
    log.warn('circuit breaker detector degraded', { track, why });
  }

  /** What the next model step must embed: earlier answers that deferred their embeddings, still windowed. */
  pendingEmbeddings(): { step: number; text: string }[] {
    const b = this.armed;
    this.deferred = this.deferred.filter((d) => b.inWindow(d.track, d.index));
    return this.deferred.map(({ step, text }) => ({ step, text }));
  }

  /**
   * A finished model step: the embeddings it brings back for earlier answers go into the window first (no
   * message is compared with an answer before its embedding is there), then its spend (cost cap, velocity),
   * then its message (repetition detectors). `answer` is the step's number and text, kept while the answer's
   * own embedding is deferred.
   */
  async observeStep(
    track: string,
    spend: StepSpend,
    features: MessageFeatures | undefined,
    answer?: { step: number; text: string; embedded?: DeferredEmbedding[] },
  ): Promise<void> {
    const b = this.armed;
    for (const e of answer?.embedded ?? []) {
      const at = this.deferred.findIndex((d) => d.step === e.step);
      if (at < 0) continue;
      const [d] = this.deferred.splice(at, 1);
      if (e.degraded && !e.degradedLogged) this.warnDegraded(d!.track, e.degraded);
      b.fillEmbedding(d!.track, d!.index, e);
    }
    const spendTrip = b.observeSpend(track, spend);
    if (features?.degraded && !features.degradedLogged) this.warnDegraded(track, features.degraded);
    if (features?.embeddingDeferred && answer)
      this.deferred.push({ track, step: answer.step, index: b.nextMessageIndex(track), text: answer.text });
    const trip = spendTrip ?? (features ? b.observeMessage(track, features) : undefined);
    if (trip) await this.onTrip(trip, false);
  }
}
