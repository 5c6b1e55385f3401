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

/**
 * Which embedder the semantic detector uses: the local sentence-embedding model (default; all-MiniLM-L6-v2 as
 * ONNX, installed by scripts/embedding-model.sh, `modelDir` overrides where), character 3-gram TF-IDF only
 * (`ngram`), or any OpenAI-compatible endpoint. A model that cannot load or answer falls back to the n-grams
 * and says so in the breaker's `degraded` list.
 */
export type EmbedderConfig =
  | { kind: 'local'; modelDir?: string }
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
    /** Cosine of character 3-gram TF-IDF vectors (the fallback when no embedding is available). */
    threshold: number;
    /** Cosine of sentence embeddings (the local model or a remote embedder). */
    embeddingThreshold: number;
    hits: number;
    /** A message closer to the previous one than to any older match by more than this is refinement, not a loop. */
    driftMargin: number;
  };
  code: { similarity: number; hits: number; minTokens: number };
  /**
   * Spend velocity over the steps that ended in the last `windowMs`: dollars a minute (input and output at the
   * model's prices) and output tokens a minute. Output tokens, not all tokens: the prompt a growing chat resends
   * every step is context, not work, and counting it made a healthy run on a fast model look like a runaway.
   */
  velocity: {
    windowMs: number;
    maxOutputTokensPerMinute: number;
    maxUsdPerMinute: number;
    minSteps: number;
  };
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

/** Defaults chosen on the evaluation set in eval/breaker (see the README's precision/recall table). */
export const DEFAULT_BREAKER_CONFIG: Omit<BreakerConfig, 'capUsd'> = {
  detectors: [...DETECTORS],
  windowSize: 8,
  minChars: 24,
  exact: { hits: 1 },
  tool: { hits: 2 },
  semantic: { threshold: 0.5, embeddingThreshold: 0.8, hits: 2, driftMargin: 0.02 },
  code: { similarity: 0.97, hits: 2, minTokens: 12 },
  velocity: { windowMs: 60_000, maxOutputTokensPerMinute: 90_000, maxUsdPerMinute: 0.02, minSteps: 4 },
  embedder: { kind: 'local' },
  resumeWindowMs: 0,
};

/** A single agent's cap when its options name none: documented, shown in jukebox.breaker.status, never infinite. */
export const DEFAULT_AGENT_CAP_USD = 2;

/**
 * A single agent's spend-velocity defaults, above what a healthy run on the fastest hosted models reaches. The
 * group defaults (tuned on the evaluation set) flag $0.02/min, which one agent on a frontier model passes in
 * normal work; a lone agent's runaway spend is the cost cap's to stop. The fastest hosted models generate about
 * 3,000 output tokens a second (180,000 a minute); a 100-step tool loop at that speed, half a second a step,
 * whose conversation grows from 4,000 to 122,800 tokens, spends $3.12 a minute at gpt-4.1-mini's prices
 * (test/breaker/healthyFastRunDoesNotTrip.test.ts). So velocity flags 300,000 output tokens a minute (5,000 a
 * second: several generations at once on one track) or $5 a minute.
 */
export const DEFAULT_AGENT_VELOCITY: Pick<
  BreakerConfig['velocity'],
  'maxUsdPerMinute' | 'maxOutputTokensPerMinute'
> = {
  maxUsdPerMinute: 5,
  maxOutputTokensPerMinute: 300_000,
};

const VELOCITY_FIELDS = new Set(['windowMs', 'maxOutputTokensPerMinute', 'maxUsdPerMinute', 'minSteps']);

/** A single agent's breaker options: everything optional, capUsd defaulting to DEFAULT_AGENT_CAP_USD. */
export type AgentBreakerOptions = Partial<BreakerConfigInput>;

/**
 * The breaker config of one agent run. A cap given as anything but a positive number (undefined included,
 * when the key is there) is a BreakerConfigError, not the default and never "unlimited".
 */
export function resolveAgentBreakerConfig(input: AgentBreakerOptions | undefined): BreakerConfig {
  if (input !== undefined && (input === null || typeof input !== 'object' || Array.isArray(input)))
    throw new BreakerConfigError(
      'breaker',
      `must be an options object such as { capUsd: 1 }, or false to run without a breaker (got ${JSON.stringify(input)})`,
    );
  const capUsd = input && 'capUsd' in input ? (input.capUsd as number) : DEFAULT_AGENT_CAP_USD;
  return resolveBreakerConfig({
    ...input,
    capUsd,
    velocity: { ...DEFAULT_AGENT_VELOCITY, ...input?.velocity },
  });
}

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
  fraction('semantic.embeddingThreshold', c.semantic.embeddingThreshold);
  if (!(c.semantic.driftMargin >= 0 && c.semantic.driftMargin < 1))
    throw new BreakerConfigError(
      'semantic.driftMargin',
      `must be a number in [0, 1) (got ${String(c.semantic.driftMargin)})`,
    );
  fraction('code.similarity', c.code.similarity);
  for (const k of Object.keys(c.velocity))
    if (!VELOCITY_FIELDS.has(k))
      throw new BreakerConfigError(
        `velocity.${k}`,
        k === 'maxTokensPerSecond'
          ? 'is no longer read: velocity counts output tokens a minute (velocity.maxOutputTokensPerMinute), not every token a second, since the prompt a growing chat resends is not spend rate'
          : `is not a velocity setting (known: ${[...VELOCITY_FIELDS].join(', ')})`,
      );
  positive('velocity.windowMs', c.velocity.windowMs);
  positive('velocity.maxOutputTokensPerMinute', c.velocity.maxOutputTokensPerMinute);
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
  if (e.kind !== 'local' && e.kind !== 'ngram' && e.kind !== 'openai-compatible')
    throw new BreakerConfigError(
      'embedder.kind',
      `must be "local", "ngram" or "openai-compatible" (got ${String(e.kind)})`,
    );
  if (e.kind === 'local') {
    const dir = (e as { modelDir?: unknown }).modelDir;
    if (dir !== undefined && (typeof dir !== 'string' || !dir))
      throw new BreakerConfigError('embedder.modelDir', `must be a folder path (got ${String(dir)})`);
  }
  if (e.kind === 'openai-compatible') {
    const o = e as { baseURL?: unknown; model?: unknown };
    if (typeof o.baseURL !== 'string' || !/^https?:\/\//.test(o.baseURL))
      throw new BreakerConfigError('embedder.baseURL', `must be an http(s) URL (got ${String(o.baseURL)})`);
    if (typeof o.model !== 'string' || !o.model)
      throw new BreakerConfigError('embedder.model', 'must name the embedding model');
  }
  return c;
}
