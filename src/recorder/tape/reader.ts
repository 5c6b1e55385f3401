/** Whole-tape reading: everything a consumer needs in one call, built on the verifying cursor. */
import type { SealInfo, TapeBlob, TapeFrame, TornTail } from './cursor';
import { openTape } from './cursor';
import { TapeCorruptError, TapeLimitError } from './errors';
import type { FormatVersion, TapeHeader } from './header';
import type { TapeLimits } from './limits';

export interface ReadOptions {
  limits?: Partial<TapeLimits>;
  /**
   * Instead of throwing on a corrupt or over-limit frame, return the frames before it and describe the fault
   * in `corruption`. Header faults still throw: without a header nothing is trustworthy.
   */
  recover?: boolean;
  name?: string;
}

export interface Tape {
  header: TapeHeader;
  /** The tape's format version (FORMAT.md "Versions"). */
  version: FormatVersion;
  headerChecksum: string;
  /** Every verified frame in file order, blob and seal frames included. */
  frames: TapeFrame[];
  blobs: Map<string, TapeBlob>;
  sealed: boolean;
  seal: SealInfo | undefined;
  outcome: unknown;
  tornTail: TornTail | null;
  /** Chain value after the last verified frame, hex. */
  chain: string;
  /** Offset just past the last verified frame. */
  byteLength: number;
  /** Only with `recover: true`: the error that stopped reading. */
  corruption: TapeCorruptError | TapeLimitError | null;
}

export function readTape(input: string | Uint8Array, options: ReadOptions = {}): Tape {
  const cursor = openTape(input, { limits: options.limits, name: options.name });
  const frames: TapeFrame[] = [];
  let corruption: TapeCorruptError | TapeLimitError | null = null;
  try {
    for (;;) {
      let f: TapeFrame | undefined;
      try {
        f = cursor.next();
      } catch (err) {
        if (options.recover && (err instanceof TapeCorruptError || err instanceof TapeLimitError)) {
          corruption = err;
          break;
        }
        throw err;
      }
      if (!f) break;
      frames.push(f);
    }
  } finally {
    cursor.close();
  }
  return {
    header: cursor.header,
    version: cursor.version,
    headerChecksum: cursor.headerChecksum,
    frames,
    blobs: cursor.blobs,
    sealed: cursor.sealed,
    seal: cursor.seal,
    outcome: cursor.outcome,
    tornTail: cursor.tornTail,
    chain: cursor.chain,
    byteLength: cursor.offset,
    corruption,
  };
}
