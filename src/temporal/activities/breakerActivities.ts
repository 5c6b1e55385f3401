import { Context } from '@temporalio/activity';
import {
  type BreakerConfig,
  type BreakerConfigInput,
  type EmbedderConfig,
  resolveBreakerConfig,
} from '../../breaker/config';
import { BreakerFeatureSource } from '../../breaker/featureSource';
import type { BreakerMessage, MessageFeatures } from '../../breaker/features';
import { recordTrip } from '../../breaker/guardStream';
import type { BreakerTrip } from '../../breaker/trip';
import { loadPriceBook, type ModelPrice, type PriceBook } from '../../llm/pricing';

export interface BreakerActivityDeps {
  /** Default: the process's price book (built-in table, JUKEBOX_PRICE_TABLE overrides). */
  priceBook?: PriceBook;
  python?: string;
  /** Shared with the worker's llm step, so both use one loaded embedding model. */
  features?: BreakerFeatureSource;
}

export interface BreakerPreflightInput {
  step: number;
  config: BreakerConfigInput;
  models: { provider: string; model: string }[];
}

/** The resolved config and the price of every model the run will call, taken once at start-up. */
export interface BreakerPreflight {
  config: BreakerConfig;
  prices: Record<string, ModelPrice>;
  priceSource: string;
}

export const priceKey = (provider: string, model: string) => `${provider}/${model}`;

export interface BreakerFeaturesInput {
  step: number;
  message: BreakerMessage;
  minChars: number;
  embedder: EmbedderConfig;
}

/**
 * The breaker's I/O: checking config and prices at start-up (the worker's price table is I/O), parsing code
 * and embedding messages, and writing a trip decided in the workflow onto the tape.
 */
export function createBreakerActivities(deps: BreakerActivityDeps = {}) {
  const source = deps.features ?? new BreakerFeatureSource(deps.python ? { python: deps.python } : {});
  return {
    /** A bad cap or an unpriced model fails here, before the first model call, never as "unlimited". */
    async breakerPreflight(input: BreakerPreflightInput): Promise<BreakerPreflight> {
      const config = resolveBreakerConfig(input.config);
      const book = deps.priceBook ?? loadPriceBook();
      const prices: Record<string, ModelPrice> = {};
      for (const m of input.models) prices[priceKey(m.provider, m.model)] = book.priceOf(m.provider, m.model);
      return { config, prices, priceSource: book.table.source };
    },

    async breakerFeatures(input: BreakerFeaturesInput): Promise<MessageFeatures> {
      return source.features(
        input.message,
        { minChars: input.minChars, embedder: input.embedder },
        Context.current().cancellationSignal,
      );
    },

    async breakerRecordTrip(input: { step: number; trip: BreakerTrip }): Promise<void> {
      recordTrip(input.trip);
    },
  };
}

export type BreakerActivities = ReturnType<typeof createBreakerActivities>;
