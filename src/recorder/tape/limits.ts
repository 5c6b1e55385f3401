/**
 * Decode limits. Every allocation a reader makes is bounded by one of these, checked before the allocation, so
 * a hostile or corrupt tape costs at most about `maxFrameBytes` of memory per frame in flight.
 */
export interface TapeLimits {
  /** Largest header payload (bytes between the 16-byte preamble and the header checksum). */
  maxHeaderBytes: number;
  /** Largest frame, fixed fields included. Blobs are frames, so this also caps a blob. */
  maxFrameBytes: number;
  /** Deepest nesting of arrays/maps inside one payload. */
  maxDepth: number;
  /** Most values (scalars and containers) inside one payload. */
  maxValues: number;
  /** Longest single string or byte string inside a payload. */
  maxStringBytes: number;
}

export const DEFAULT_LIMITS: Readonly<TapeLimits> = Object.freeze({
  maxHeaderBytes: 64 * 1024,
  maxFrameBytes: 64 * 1024 * 1024,
  maxDepth: 64,
  maxValues: 1 << 20,
  maxStringBytes: 16 * 1024 * 1024,
});

export function resolveLimits(partial?: Partial<TapeLimits>): TapeLimits {
  return { ...DEFAULT_LIMITS, ...partial };
}
