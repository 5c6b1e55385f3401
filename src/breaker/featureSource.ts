import type { EmbedderConfig } from './config';
import { createEmbedder, type Embedder } from './embedder';
import { embedderFailed, extractFeatures, isStandingFailure, quantizeEmbedding } from './extractFeatures';
import type { BreakerMessage, DeferredEmbedding, MessageFeatures } from './features';

/** What an activity needs to compute a message's features: the workflow's resolved config picks it. */
export interface FeatureRequest {
  minChars: number;
  embedder: EmbedderConfig;
  /**
   * The workflow fills deferred embeddings in (WorkflowBreaker): a message that makes tool calls comes back
   * without its embedding (`embeddingDeferred`), which is computed off the step's path and returned by the
   * next model step, listed in `pendingEmbeddings`.
   */
  deferToolTurnEmbeddings?: boolean;
  /** Earlier messages of the run whose embeddings were deferred: this step returns them. */
  pendingEmbeddings?: { step: number; text: string }[];
}

/** At most this many deferred embeddings are kept waiting for the step that collects them. */
const MAX_DEFERRED = 256;

/**
 * One worker's way to turn messages into breaker features: keeps one embedder per config (a local model is
 * loaded once per process, a failed load is remembered), shared by the breaker's own activities and the llm
 * step, which computes the features of its own answer so a single agent pays no extra activity per step.
 */
export class BreakerFeatureSource {
  private readonly embedders = new Map<string, Embedder | undefined>();
  /** Deferred embeddings under way or done, by run and step; each is collected once. */
  private readonly deferred = new Map<string, { result: Promise<DeferredEmbedding>; done: boolean }>();

  /** Standing failures already logged (by message): once per worker process, not once per step. */
  private readonly logged = new Set<string>();

  /** `warn`: where a standing failure (the local model cannot load) is logged, once (default: stderr). */
  constructor(private readonly options: { python?: string; warn?: (message: string) => void } = {}) {}

  private readonly onStandingFailure = (err: Error): void => {
    if (this.logged.has(err.message)) return;
    this.logged.add(err.message);
    (this.options.warn ?? ((m: string) => process.stderr.write(`jukebox WARN: ${m}\n`)))(err.message);
  };

  embedderFor(config: EmbedderConfig): Embedder | undefined {
    const key = JSON.stringify(config);
    if (!this.embedders.has(key)) this.embedders.set(key, createEmbedder(config));
    return this.embedders.get(key);
  }

  /**
   * The message's features. With `defer` (the run and step of an llm step whose workflow fills deferred
   * embeddings in) and tool calls in the message, its embedding is started and left running.
   */
  features(
    message: BreakerMessage,
    request: FeatureRequest,
    signal?: AbortSignal,
    defer?: { run: string; step: number; startWhen?: (start: () => void) => void },
  ): Promise<MessageFeatures> {
    const embedder = this.embedderFor(request.embedder);
    const deferring = embedder && defer && request.deferToolTurnEmbeddings && message.toolCalls?.length;
    return extractFeatures(
      message,
      { minChars: request.minChars },
      {
        ...(embedder ? { embedder } : {}),
        ...(deferring ? { deferEmbedding: (text: string) => this.startDeferred(embedder, defer, text) } : {}),
        ...(this.options.python ? { python: this.options.python } : {}),
        ...(signal ? { signal } : {}),
        onStandingFailure: this.onStandingFailure,
      },
    );
  }

  private startDeferred(
    embedder: Embedder,
    { run, step, startWhen }: { run: string; step: number; startWhen?: (start: () => void) => void },
    text: string,
  ): void {
    const key = `${run}\n${step}`;
    // Started when the step that deferred it is done (startWhen): run alongside the step's closing fsync and
    // completion, it slowed them down on a two-core machine.
    const started = startWhen ? new Promise<void>((resolve) => startWhen(resolve)) : Promise.resolve();
    const entry = {
      result: started.then(() =>
        embedOnce(embedder, step, text, this.onStandingFailure, { background: true }),
      ),
      done: false,
    };
    entry.result.then(() => {
      entry.done = true;
    });
    this.deferred.delete(key);
    this.deferred.set(key, entry);
    // Runs that end right after a tool turn never collect theirs.
    for (const old of this.deferred.keys()) {
      if (this.deferred.size <= MAX_DEFERRED) break;
      this.deferred.delete(old);
    }
  }

  /**
   * The embeddings of `request.pendingEmbeddings`: the ones this worker started (usually finished while the
   * workflow ran the tool steps), else computed now from their text (another worker deferred them, or this one
   * restarted). Never rejects: a failed embedding comes back as `degraded`.
   */
  collectDeferred(request: FeatureRequest, run: string): Promise<DeferredEmbedding[]> {
    const embedder = this.embedderFor(request.embedder);
    return Promise.all(
      (request.pendingEmbeddings ?? []).map(({ step, text }) => {
        const key = `${run}\n${step}`;
        const started = this.deferred.get(key);
        this.deferred.delete(key);
        if (started?.done) return started.result;
        if (!embedder) return started?.result ?? { step, degraded: 'no embedder is configured for this run' };
        // Not done yet (the low-priority thread got no core, or the model is still loading there): the step
        // waits for whichever finishes first, the background one or the same embedding at normal priority.
        const now = embedOnce(embedder, step, text, this.onStandingFailure);
        return started ? Promise.race([started.result, now]) : now;
      }),
    );
  }
}

async function embedOnce(
  embedder: Embedder,
  step: number,
  text: string,
  onStandingFailure: (err: Error) => void,
  options?: { background: boolean },
): Promise<DeferredEmbedding> {
  try {
    return { step, embedding: quantizeEmbedding(await embedder.embed(text, undefined, options)) };
  } catch (err) {
    if (!isStandingFailure(err)) return { step, degraded: embedderFailed(embedder, err) };
    onStandingFailure(err);
    return { step, degraded: embedderFailed(embedder, err), degradedLogged: true };
  }
}
