/**
 * The circuit breaker: repetition detectors (exact, tool call, semantic, code shape), spend velocity and a
 * per-track cost cap that cancels a stream mid-way; its activities, signals and the client helper. See
 * docs/circuit-breaker.md.
 */
export { codeShapes, findCode, pythonShapes, typescriptShape } from './codeShape';
export {
  type BreakerConfig,
  type BreakerConfigInput,
  DEFAULT_BREAKER_CONFIG,
  DETECTORS,
  type EmbedderConfig,
  resolveBreakerConfig,
} from './config';
export { createEmbedder, type Embedder, OpenAICompatibleEmbedder } from './embedder';
export { BreakerConfigError, BreakerTrippedError } from './errors';
export { extractFeatures, type FeatureDeps } from './extractFeatures';
export type { BreakerMessage, CodeShape, MessageFeatures } from './features';
export { guardStream, recordTrip } from './guardStream';
export { LoopBreaker, type StepSpend, type TrackSnapshot } from './loopBreaker';
export { type StreamBudget, StreamGuard } from './streamGuard';
export type { BreakerTrip, DetectorName } from './trip';
