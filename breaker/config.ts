import { BreakerConfigError } from './errors';
import type { DetectorName } from './trip';

export const DETECTORS: readonly DetectorName[] = [
  'exact-repeat',
  'tool-repeat',
  'semantic-repeat',
  'code-repeat',
  'spend-velocity',
  'cost-cap',
];

/** Which embedder the semantic detector uses: the local n-gram one, or any OpenAI-compatible endpoint. */
export type EmbedderConfig =
  | { kind: 'ngram' }
  | { kind: 'openai-compatible'; baseURL: string; model: string; apiKeyEnv?: string };

/**
 * Every threshold of every detector. "hits" counts earlier messages of the same track, inside the window,
 * that match the new one: hits 2 means the third occurrence trips.
 */
export interface BreakerConfig {
  /** USD per track; required, there is no "unlimited". */
  capUsd: number;
  detectors: DetectorName[];
  /** Messages kept per track; bounds memory and what "repetition" means. */
  windowSize: number;
  /** Messages shorter than this (after normalizing) never count as exact or semantic repeats ("OK."). */
  minChars: number;
  exact: { hits: number };
  tool: { hits: number };
  semantic: {
    threshold: number;
    hits: number;
    /** A message closer to the previous one than to any older match by more than this is refinement, not a loop. */
    driftMargin: number;
  };
  code: { similarity: number; hits: number; minTokens: number };
  velocity: { windowMs: number; maxTokensPerSecond: number; maxUsdPerMinute: number; minSteps: number };
  embedder: EmbedderConfig;
  /** After a trip, how long the run waits for a jukebox.breaker.close signal before failing; 0 fails at once. */
  resumeWindowMs: number;
}

export type BreakerConfigInput = Partial<
  Omit<BreakerConfig, 'exact' | 'tool' | 'semantic' | 'code' | 'velocity'>
> & {
  capUsd: number;
  exact?: Partial<BreakerConfig['exact']>;
  tool?: Partial<BreakerConfig['tool']>;
  semantic?: Partial<BreakerConfig['semantic']>;
  code?: Partial<BreakerConfig['code']>;
  velocity?: Partial<BreakerConfig['velocity']>;
};

/** Defaults chosen on the evaluation set in agents/breakerEval (see the README's precision/recall table). */
export const DEFAULT_BREAKER_CONFIG: Omit<BreakerConfig, 'capUsd'> = {
  detectors: [...DETECTORS],
  windowSize: 8,
  minChars: 24,
  exact: { hits: 1 },
  tool: { hits: 2 },
  semantic: { threshold: 0.5, hits: 2, driftMargin: 0.02 },
  code: { similarity: 0.97, hits: 2, minTokens: 12 },
  velocity: { windowMs: 60_000, maxTokensPerSecond: 1500, maxUsdPerMinute: 0.02, minSteps: 4 },
  embedder: { kind: 'ngram' },
  resumeWindowMs: 0,
};

function positive(field: string, v: unknown, integer = false): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v)))
    throw new BreakerConfigError(
      field,
      `must be a positive ${integer ? 'integer' : 'finite number'} (got ${String(v)})`,
    );
}

function fraction(field: string, v: unknown): void {
  if (typeof v !== 'number' || !(v > 0 && v <= 1))
    throw new BreakerConfigError(field, `must be a number in (0, 1] (got ${String(v)})`);
}

/** Fills defaults and checks every field; throws BreakerConfigError naming the first bad one. */
export function resolveBreakerConfig(input: BreakerConfigInput | undefined): BreakerConfig {
  if (!input || typeof input !== 'object')
    throw new BreakerConfigError('(the whole object)', 'is missing: give at least { capUsd }');
  const d = DEFAULT_BREAKER_CONFIG;
  const c: BreakerConfig = {
    ...d,
    ...input,
    exact: { ...d.exact, ...input.exact },
    tool: { ...d.tool, ...input.tool },
    semantic: { ...d.semantic, ...input.semantic },
    code: { ...d.code, ...input.code },
    velocity: { ...d.velocity, ...input.velocity },
    embedder: input.embedder ?? d.embedder,
    detectors: input.detectors ?? [...d.detectors],
  };
  positive('capUsd', c.capUsd);
  positive('windowSize', c.windowSize, true);
  if (!Number.isInteger(c.minChars) || c.minChars < 0)
    throw new BreakerConfigError('minChars', `must be an integer >= 0 (got ${String(c.minChars)})`);
  positive('exact.hits', c.exact.hits, true);
  positive('tool.hits', c.tool.hits, true);
  positive('semantic.hits', c.semantic.hits, true);
  positive('code.hits', c.code.hits, true);
  positive('code.minTokens', c.code.minTokens, true);
  fraction('semantic.threshold', c.semantic.threshold);
  if (!(c.semantic.driftMargin >= 0 && c.semantic.driftMargin < 1))
    throw new BreakerConfigError(
      'semantic.driftMargin',
      `must be a number in [0, 1) (got ${String(c.semantic.driftMargin)})`,
    );
  fraction('code.similarity', c.code.similarity);
  positive('velocity.windowMs', c.velocity.windowMs);
  positive('velocity.maxTokensPerSecond', c.velocity.maxTokensPerSecond);
  positive('velocity.maxUsdPerMinute', c.velocity.maxUsdPerMinute);
  positive('velocity.minSteps', c.velocity.minSteps, true);
  if (!Number.isFinite(c.resumeWindowMs) || c.resumeWindowMs < 0)
    throw new BreakerConfigError('resumeWindowMs', `must be >= 0 (got ${String(c.resumeWindowMs)})`);
  if (!Array.isArray(c.detectors) || c.detectors.length === 0)
    throw new BreakerConfigError('detectors', `must list at least one of ${DETECTORS.join(', ')}`);
  for (const name of c.detectors)
    if (!DETECTORS.includes(name))
      throw new BreakerConfigError(
        'detectors',
        `names an unknown detector "${String(name)}" (known: ${DETECTORS.join(', ')})`,
      );
  const e = c.embedder as Partial<EmbedderConfig> & { kind?: unknown };
  if (e.kind !== 'ngram' && e.kind !== 'openai-compatible')
    throw new BreakerConfigError(
      'embedder.kind',
      `must be "ngram" or "openai-compatible" (got ${String(e.kind)})`,
    );
  if (e.kind === 'openai-compatible') {
    const o = e as { baseURL?: unknown; model?: unknown };
    if (typeof o.baseURL !== 'string' || !/^https?:\/\//.test(o.baseURL))
      throw new BreakerConfigError('embedder.baseURL', `must be an http(s) URL (got ${String(o.baseURL)})`);
    if (typeof o.model !== 'string' || !o.model)
      throw new BreakerConfigError('embedder.model', 'must name the embedding model');
  }
  return c;
}
