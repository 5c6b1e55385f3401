import type { BreakerConfig } from './config';
import type { MessageFeatures } from './features';
import { denseCosine, sortedJaccard, tfidfCosines } from './similarity';
import { type BreakerTrip, type DetectorName, formatUsd } from './trip';

/** One finished model step of a track, for spend velocity and the cost cap. */
export interface StepSpend {
  startMs: number;
  endMs: number;
  /** Tokens the model generated; the prompt it was sent does not count toward velocity. */
  outputTokens: number;
  /** What the step cost, input and output. */
  usd: number;
}

interface WindowEntry {
  index: number;
  features: MessageFeatures;
}

export interface TrackState {
  window: WindowEntry[];
  spend: StepSpend[];
  spentUsd: number;
  messages: number;
}

/** Everything a LoopBreaker knows, as plain data: a run that continues as new carries it into its next segment. */
export interface LoopBreakerState {
  capUsd: number;
  tracks: [string, TrackState][];
  degraded: string[];
}

export interface TrackSnapshot {
  track: string;
  messages: number;
  spentUsd: number;
  windowed: number;
}

/** Whether `next` holds nearly all of `earlier`'s character 3-grams and at least 15% more of them. */
function extends_(next: Record<string, number>, earlier: Record<string, number>): boolean {
  let kept = 0;
  let before = 0;
  let after = 0;
  for (const k in earlier) {
    before += earlier[k]!;
    kept += Math.min(earlier[k]!, next[k] ?? 0);
  }
  for (const k in next) after += next[k]!;
  return before > 0 && kept / before >= 0.9 && after >= 1.15 * before;
}

/**
 * The breaker's deterministic state: a sliding window of message features and of step spend per track. It runs
 * inside the workflow (so its state is part of the durable history) and in the offline evaluation alike; the
 * expensive parts (parsing code, embedding) arrive precomputed as MessageFeatures.
 */
export class LoopBreaker {
  private readonly tracks = new Map<string, TrackState>();
  private readonly on: Set<DetectorName>;
  /** What went wrong with a detector that could not run (e.g. the embedder failed), newest last. */
  readonly degraded: string[] = [];

  constructor(private config: BreakerConfig) {
    this.on = new Set(config.detectors);
  }

  get capUsd(): number {
    return this.config.capUsd;
  }

  /** The whole state, to carry into a run's next segment (restoreState()). */
  saveState(): LoopBreakerState {
    return { capUsd: this.config.capUsd, tracks: [...this.tracks], degraded: [...this.degraded] };
  }

  /** Takes up a state saved by saveState(): windows, spend and degraded detectors as they were. */
  restoreState(state: LoopBreakerState): void {
    this.setCap(state.capUsd);
    this.tracks.clear();
    for (const [track, s] of state.tracks) this.tracks.set(track, s);
    this.degraded.splice(0, this.degraded.length, ...state.degraded);
  }

  /** Resume with a new cap (the human decision of a jukebox.breaker.close signal). */
  setCap(capUsd: number): void {
    this.config = { ...this.config, capUsd };
  }

  /** After a human resumed a tripped track: what tripped it no longer counts against what comes next. */
  clearWindow(track: string): void {
    const s = this.tracks.get(track);
    if (s) {
      s.window = [];
      s.spend = [];
    }
  }

  private state(track: string): TrackState {
    let s = this.tracks.get(track);
    if (!s) {
      s = { window: [], spend: [], spentUsd: 0, messages: 0 };
      this.tracks.set(track, s);
    }
    return s;
  }

  spentUsd(track: string): number {
    return this.tracks.get(track)?.spentUsd ?? 0;
  }

  snapshot(): TrackSnapshot[] {
    return [...this.tracks].map(([track, s]) => ({
      track,
      messages: s.messages,
      spentUsd: s.spentUsd,
      windowed: s.window.length,
    }));
  }

  /** Counts a finished step's spend; trips on the cost cap or on spend velocity over the time window. */
  observeSpend(track: string, step: StepSpend): BreakerTrip | undefined {
    const s = this.state(track);
    s.spentUsd += step.usd;
    s.spend.push(step);
    const from = step.endMs - this.config.velocity.windowMs;
    while (s.spend.length && s.spend[0]!.endMs < from) s.spend.shift();
    // Bounded even if a clock stands still: the window never holds more steps than this.
    if (s.spend.length > 1024) s.spend.splice(0, s.spend.length - 1024);
    if (this.on.has('cost-cap') && s.spentUsd > this.config.capUsd)
      return {
        detector: 'cost-cap',
        track,
        reason: `spent $${formatUsd(s.spentUsd)}, over the cap of $${this.config.capUsd}`,
        evidence: { capUsd: this.config.capUsd, spentUsd: s.spentUsd, lastStepUsd: step.usd },
        spendUsd: s.spentUsd,
      };
    const v = this.config.velocity;
    if (!this.on.has('spend-velocity') || s.spend.length < v.minSteps) return undefined;
    const spanMs = Math.max(1000, step.endMs - s.spend[0]!.startMs);
    const outputTokens = s.spend.reduce((n, e) => n + e.outputTokens, 0);
    const usd = s.spend.reduce((n, e) => n + e.usd, 0);
    const outputTokensPerMinute = outputTokens / (spanMs / 60_000);
    const usdPerMinute = usd / (spanMs / 60_000);
    if (outputTokensPerMinute <= v.maxOutputTokensPerMinute && usdPerMinute <= v.maxUsdPerMinute)
      return undefined;
    const what =
      usdPerMinute > v.maxUsdPerMinute
        ? `$${usdPerMinute.toFixed(4)}/min, over ${v.maxUsdPerMinute}`
        : `${outputTokensPerMinute.toFixed(0)} output tokens/min, over ${v.maxOutputTokensPerMinute}`;
    return {
      detector: 'spend-velocity',
      track,
      reason: `${what} across the last ${s.spend.length} steps (${(spanMs / 1000).toFixed(1)} s)`,
      evidence: { steps: s.spend.length, spanMs, outputTokens, usd, outputTokensPerMinute, usdPerMinute },
      spendUsd: s.spentUsd,
    };
  }

  /** The index the track's next message gets (observeMessage numbers them from 0). */
  nextMessageIndex(track: string): number {
    return this.tracks.get(track)?.messages ?? 0;
  }

  /** Whether a message is still in its track's window (only those are compared with later ones). */
  inWindow(track: string, index: number): boolean {
    return this.tracks.get(track)?.window.some((e) => e.index === index) ?? false;
  }

  /**
   * Gives a windowed message the embedding it deferred (`embeddingDeferred`), before any later message is
   * compared with it; a failed embedding leaves it its n-grams and is reported like a failure at the time.
   */
  fillEmbedding(track: string, index: number, filled: { embedding?: number[]; degraded?: string }): void {
    const entry = this.tracks.get(track)?.window.find((e) => e.index === index);
    if (!entry?.features.embeddingDeferred) return;
    const { embeddingDeferred: _, ...features } = entry.features;
    if (filled.embedding) features.embedding = filled.embedding;
    if (filled.degraded) {
      features.degraded = features.degraded ? `${features.degraded}; ${filled.degraded}` : filled.degraded;
      this.degraded.push(`track ${track} message ${index}: ${filled.degraded}`);
    }
    entry.features = features;
  }

  /** Adds a message to its track's window; trips when it repeats earlier ones in the window. */
  observeMessage(track: string, features: MessageFeatures): BreakerTrip | undefined {
    const s = this.state(track);
    const index = s.messages++;
    if (features.degraded) this.degraded.push(`track ${track} message ${index}: ${features.degraded}`);
    const trip = this.detect(track, s, index, features);
    s.window.push({ index, features });
    if (s.window.length > this.config.windowSize) s.window.shift();
    return trip;
  }

  private detect(track: string, s: TrackState, index: number, f: MessageFeatures): BreakerTrip | undefined {
    const c = this.config;
    const trip = (detector: DetectorName, reason: string, matches: unknown[]): BreakerTrip => ({
      detector,
      track,
      reason,
      evidence: { message: { index, excerpt: f.excerpt }, matches },
      spendUsd: s.spentUsd,
    });
    const w = s.window;

    if (this.on.has('tool-repeat'))
      for (let k = 0; k < f.toolKeys.length; k++) {
        const same = w.filter((e) => e.features.toolKeys.includes(f.toolKeys[k]!));
        if (same.length >= c.tool.hits)
          return trip(
            'tool-repeat',
            `tool call ${f.toolExcerpts[k]} repeats ${same.length} earlier call(s) in the window (arguments compared canonically)`,
            same.map((e) => ({ index: e.index, excerpt: e.features.excerpt })),
          );
      }

    if (this.on.has('code-repeat'))
      for (const shape of f.codeShapes) {
        if (shape.tokens < c.code.minTokens) continue;
        const same = w.flatMap((e) => {
          let best = 0;
          for (const other of e.features.codeShapes) {
            if (other.lang !== shape.lang) continue;
            best = Math.max(best, other.hash === shape.hash ? 1 : sortedJaccard(shape.grams, other.grams));
          }
          return best >= c.code.similarity
            ? [{ index: e.index, excerpt: e.features.excerpt, similarity: best }]
            : [];
        });
        if (same.length >= c.code.hits)
          return trip(
            'code-repeat',
            `${shape.lang} code is the same program (names, literals and layout normalized) as ${same.length} earlier message(s)`,
            same,
          );
      }

    // A turn that makes new tool calls is progress (page 3, then page 4): its wording is allowed to repeat.
    if (f.toolKeys.length) return undefined;

    if (this.on.has('exact-repeat') && f.exactKey) {
      const same = w.filter((e) => e.features.exactKey === f.exactKey);
      if (same.length >= c.exact.hits)
        return trip(
          'exact-repeat',
          `message repeats ${same.length} earlier message(s) word for word (case, spacing, punctuation ignored)`,
          same.map((e) => ({ index: e.index, excerpt: e.features.excerpt })),
        );
    }

    if (this.on.has('semantic-repeat') && f.exactKey) {
      const docs = [...w.map((e) => e.features.ngrams ?? {}), f.ngrams ?? {}];
      const local = f.ngrams ? tfidfCosines(f.ngrams, docs.slice(0, -1), docs) : [];
      const similar = w.flatMap((e, k) => {
        if (!e.features.exactKey) return [];
        const dense = f.embedding && e.features.embedding;
        const score = dense
          ? denseCosine(f.embedding!, e.features.embedding!)
          : f.ngrams && e.features.ngrams
            ? local[k]!
            : 0;
        const threshold = dense ? c.semantic.embeddingThreshold : c.semantic.threshold;
        // Embeddings of a growing draft stay near 1 to every earlier draft: one that keeps the earlier text and
        // adds to it is progress, not a repeat (n-gram TF-IDF sees the added text by itself).
        if (dense && f.ngrams && e.features.ngrams && extends_(f.ngrams, e.features.ngrams)) return [];
        // Scores are kept relative to their threshold so the drift test below compares like with like.
        return score >= threshold
          ? [{ index: e.index, excerpt: e.features.excerpt, score, margin: score - threshold }]
          : [];
      });
      // Converging refinement drifts: each draft is closest to the one before it and further from older ones.
      // A loop comes back: some older message is about as close as the previous one.
      const previous = w.at(-1);
      const toPrevious = similar.find((m) => m.index === previous?.index)?.margin ?? 0;
      const older = Math.max(0, ...similar.filter((m) => m.index !== previous?.index).map((m) => m.margin));
      const drifting = toPrevious - older > c.semantic.driftMargin;
      if (similar.length >= c.semantic.hits && !drifting)
        return trip(
          'semantic-repeat',
          `message is near-identical in meaning to ${similar.length} earlier message(s) (${f.embedding ? `sentence-embedding cosine >= ${c.semantic.embeddingThreshold}` : `character 3-gram TF-IDF cosine >= ${c.semantic.threshold}`})`,
          similar.map(({ margin: _, ...m }) => m),
        );
    }
    return undefined;
  }
}
