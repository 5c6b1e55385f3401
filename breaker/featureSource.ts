import type { EmbedderConfig } from './config';
import { createEmbedder, type Embedder } from './embedder';
import { extractFeatures } from './extractFeatures';
import type { BreakerMessage, MessageFeatures } from './features';

/** What an activity needs to compute a message's features: the workflow's resolved config picks it. */
export interface FeatureRequest {
  minChars: number;
  embedder: EmbedderConfig;
}

/**
 * One worker's way to turn messages into breaker features: keeps one embedder per config (a local model is
 * loaded once per process, a failed load is remembered), shared by the breaker's own activities and the llm
 * step, which computes the features of its own answer so a single agent pays no extra activity per step.
 */
export class BreakerFeatureSource {
  private readonly embedders = new Map<string, Embedder | undefined>();

  constructor(private readonly options: { python?: string } = {}) {}

  embedderFor(config: EmbedderConfig): Embedder | undefined {
    const key = JSON.stringify(config);
    if (!this.embedders.has(key)) this.embedders.set(key, createEmbedder(config));
    return this.embedders.get(key);
  }

  features(message: BreakerMessage, request: FeatureRequest, signal?: AbortSignal): Promise<MessageFeatures> {
    const embedder = this.embedderFor(request.embedder);
    return extractFeatures(
      message,
      { minChars: request.minChars },
      {
        ...(embedder ? { embedder } : {}),
        ...(this.options.python ? { python: this.options.python } : {}),
        ...(signal ? { signal } : {}),
      },
    );
  }
}
