import {
  type AgentBreakerOptions,
  type BreakerConfig,
  resolveAgentBreakerConfig,
} from '../../breaker/config';
import type { BreakerFeatureSource } from '../../breaker/featureSource';
import { LoopBreaker } from '../../breaker/loopBreaker';
import type { BreakerTrip } from '../../breaker/trip';
import { loadPriceBook, type PriceBook } from '../../llm/pricing';
import type { LlmResponse } from '../../llm/types';
import type { ExchangeSink } from '../exchangeSink';
import type { WireRequestFields } from '../wire';
import { ProxySessionTrippedError } from './errors';

/** A `jbx proxy` session's breaker: `{ capUsd, ...thresholds }` (per session), or false for none. */
export type ProxyBreakerOptions = AgentBreakerOptions;

/** Why the proxy answers a request itself instead of forwarding it: the HTTP status and the error. */
export interface Refusal {
  status: number;
  type: string;
  error: Error & { code?: string };
  extra: Record<string, unknown>;
}

/**
 * The circuit breaker of one proxy session (one track): every answered call's spend goes through the cost cap
 * and the velocity detector, every answer (text and tool calls) through the repetition detectors. Once it
 * trips, the session stays open-circuit: each later request is refused with an API-shaped error carrying the
 * trip, until the session is closed. A call to a model without a price is refused before it is forwarded.
 */
export class SessionBreaker {
  private readonly breaker: LoopBreaker;
  tripped: BreakerTrip | undefined;

  constructor(
    readonly session: string,
    readonly config: BreakerConfig,
    private readonly features: BreakerFeatureSource,
    private readonly book: PriceBook = loadPriceBook(),
  ) {
    this.breaker = new LoopBreaker(config);
  }

  static resolve(options: ProxyBreakerOptions | undefined): BreakerConfig {
    return resolveAgentBreakerConfig(options);
  }

  get spentUsd(): number {
    return this.breaker.spentUsd(this.session);
  }

  /** Before forwarding: a tripped session, or a model the cap cannot price, gets an error instead. */
  refusal(fields: WireRequestFields): Refusal | undefined {
    if (this.tripped)
      return {
        status: 429,
        type: 'jukebox_breaker_tripped',
        error: new ProxySessionTrippedError(this.session, this.tripped),
        extra: {
          code: 'jukebox_breaker_tripped',
          session: this.session,
          detector: this.tripped.detector,
          reason: this.tripped.reason,
          evidence: this.tripped.evidence,
          spendUsd: this.tripped.spendUsd,
          capUsd: this.breaker.capUsd,
        },
      };
    try {
      this.book.priceOf(fields.provider, fields.model);
    } catch (err) {
      return {
        status: 400,
        type: 'jukebox_unknown_model_price',
        error: err as Error,
        extra: { session: this.session, model: fields.model },
      };
    }
    return undefined;
  }

  /** Observes a call's answer through its sink; `onTrip` runs (once) when the answer trips the breaker. */
  watch(
    sink: ExchangeSink,
    fields: WireRequestFields,
    onTrip: (trip: BreakerTrip) => Promise<void>,
  ): ExchangeSink {
    const startMs = Date.now();
    return {
      ...sink,
      response: async (summary: LlmResponse, status: number) => {
        await sink.response(summary, status);
        if (status >= 400 || this.tripped) return;
        const trip = await this.observe(fields, summary, startMs);
        if (trip) {
          this.tripped = trip;
          await onTrip(trip);
        }
      },
    };
  }

  private async observe(fields: WireRequestFields, r: LlmResponse, startMs: number) {
    const usd = this.book.costOf({ provider: fields.provider, model: fields.model, usage: r.usage });
    const spendTrip = this.breaker.observeSpend(this.session, {
      startMs,
      endMs: Date.now(),
      outputTokens: r.usage.outputTokens,
      usd,
    });
    if (spendTrip) return spendTrip;
    const features = await this.features.features(
      { text: r.text, toolCalls: r.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })) },
      { minChars: this.config.minChars, embedder: this.config.embedder },
    );
    return this.breaker.observeMessage(this.session, features);
  }

  get degraded(): string[] {
    return this.breaker.degraded;
  }
}
