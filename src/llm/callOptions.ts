import type { StreamChunk } from './types';

export interface CallOptions {
  signal?: AbortSignal;
  /** Called for every streamed chunk as it arrives (heartbeats, recording, the circuit breaker). */
  onChunk?: (chunk: StreamChunk) => void;
}
