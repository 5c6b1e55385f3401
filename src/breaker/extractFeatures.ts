import { codeShapes, findCode } from './codeShape';
import type { BreakerConfig } from './config';
import type { Embedder } from './embedder';
import type { BreakerMessage, MessageFeatures } from './features';
import { canonicalToolCall, charTrigrams, normalizeText, shortHash } from './textKeys';

export interface FeatureDeps {
  embedder?: Embedder;
  /** Given: the embedding is not awaited; this starts it and the features say `embeddingDeferred`. */
  deferEmbedding?: (text: string) => void;
  python?: string;
  signal?: AbortSignal;
  /**
   * Told of an embedder failure that is a standing condition of this process (the local model cannot load), to
   * log it once; features degraded by nothing else then say `degradedLogged`.
   */
  onStandingFailure?: (err: Error) => void;
}

/** The local model cannot load: true of every message until the worker changes, not of this one. */
export const isStandingFailure = (err: unknown): err is Error =>
  err instanceof Error && (err as { code?: string }).code === 'BREAKER_EMBEDDING_MODEL_UNAVAILABLE';

/**
 * An embedding as small integers (the unit vector times 127, rounded): features travel in activity results and
 * onto the tape with every step, and a cosine of the rounded vector differs from the exact one by about 0.005.
 */
export function quantizeEmbedding(vector: readonly number[]): number[] {
  let norm = 0;
  for (const v of vector) norm += v * v;
  norm = Math.sqrt(norm);
  if (!norm || !Number.isFinite(norm)) throw new Error('the embedder returned a zero or non-finite vector');
  return vector.map((v) => Math.round((v / norm) * 127));
}

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** What `degraded` says when the embedder failed on a message. */
export const embedderFailed = (embedder: Embedder, err: unknown): string =>
  `embedder ${embedder.name} failed (${reasonOf(err)}); semantic detector fell back to character 3-gram TF-IDF`;

/**
 * Everything the detectors need about one message. Parsing and embedding failures never fail the breaker: the
 * affected detector loses this message and `degraded` says why, the others run on.
 */
export async function extractFeatures(
  message: BreakerMessage,
  config: Pick<BreakerConfig, 'minChars'>,
  deps: FeatureDeps = {},
): Promise<MessageFeatures> {
  const calls = message.toolCalls ?? [];
  const normalized = normalizeText(message.text);
  const long = normalized.length >= config.minChars;
  const degraded: string[] = [];
  let standing = 0;
  const features: MessageFeatures = {
    excerpt: (message.text || calls.map((c) => c.name).join(', ')).slice(0, 160),
    toolKeys: [],
    toolExcerpts: [],
    codeShapes: [],
  };
  for (const c of calls) {
    const key = canonicalToolCall(c.name, c.arguments);
    features.toolKeys.push(shortHash(key));
    features.toolExcerpts.push(key.slice(0, 160));
  }
  if (long) {
    features.exactKey = shortHash(normalized);
    features.ngrams = charTrigrams(normalized);
    if (deps.embedder && deps.deferEmbedding) {
      deps.deferEmbedding(message.text);
      features.embeddingDeferred = true;
    } else if (deps.embedder)
      try {
        features.embedding = quantizeEmbedding(await deps.embedder.embed(message.text, deps.signal));
      } catch (err) {
        degraded.push(embedderFailed(deps.embedder, err));
        if (deps.onStandingFailure && isStandingFailure(err)) {
          deps.onStandingFailure(err);
          standing++;
        }
      }
  }
  try {
    features.codeShapes = await codeShapes(findCode(message.text, calls), deps.python);
  } catch (err) {
    degraded.push(`code parser failed (${reasonOf(err)}); code detector skipped this message`);
  }
  if (degraded.length) features.degraded = degraded.join('; ');
  if (degraded.length && standing === degraded.length) features.degradedLogged = true;
  return features;
}
