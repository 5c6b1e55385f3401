/**
 * A run's content store: immutable blobs named by the BLAKE3-256 of their bytes (lowercase hex), beside the
 * tapes of the tape store they belong to (a folder, or an S3 prefix for workers on several hosts). Temporal
 * payloads past a size threshold live here instead of in the workflow history (src/temporal/content/), split
 * so that each message, tool spec and large value is stored once however often a step resends it
 * (docs/tape-store.md, "The content store").
 */
import { blake3 } from '../tape';
import { toHex } from '../tape/hash';
import { ContentDamagedError } from './errors';

/** A blob's name: the BLAKE3-256 of its bytes, 64 lowercase hex digits. */
export function contentHash(bytes: Uint8Array): string {
  return toHex(blake3(bytes));
}

export const CONTENT_HASH = /^[0-9a-f]{64}$/;

export interface ContentStore {
  /** The folder or `s3://bucket/prefix/` the blobs live in: for messages. */
  readonly location: string;
  /**
   * Stores every blob (name → bytes; each name must be the hash of its bytes). When this resolves all of them
   * are durable, so a history may refer to them. Blobs the store already holds are not written again.
   */
  put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void>;
  /**
   * The blob's bytes, checked against its name: ContentMissingError when the store does not hold it,
   * ContentDamagedError when its bytes hash to something else.
   */
  get(hash: string): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * What the content store and its Temporal driver spent, summed (milliseconds of wall time): for the history
 * bench's account of what a step with the store on costs over one without.
 */
export class ContentTimings {
  /** Driver store() calls (one per Temporal payload batch sent) and their time: what a task's completion waits. */
  storeCalls = 0;
  storeMs = 0;
  /** Payloads past the threshold stored, and their bytes. */
  payloadsStored = 0;
  payloadBytesStored = 0;
  /** Driver retrieve() calls and their time: what a task waits before it runs. */
  retrieveCalls = 0;
  retrieveMs = 0;
  /** Blobs a folder store wrote (new to it), their bytes, and its waits for the disk (fsyncs) with their time. */
  blobsWritten = 0;
  bytesWritten = 0;
  diskWaits = 0;
  diskWaitMs = 0;
}

/** Throws ContentDamagedError unless `bytes` hash to `hash`. */
export function verifyBlob(hash: string, bytes: Uint8Array, store: string): Uint8Array {
  const actual = contentHash(bytes);
  if (actual !== hash)
    throw new ContentDamagedError(hash, store, `its ${bytes.byteLength} bytes hash to ${actual}`);
  return bytes;
}

/**
 * Verified blobs this process wrote or read, newest last, up to `maxBytes`: a run's next step resends the
 * conversation the previous one stored, and a worker that ran that step answers from memory.
 */
export class BlobCache {
  private readonly blobs = new Map<string, Uint8Array>();
  private bytes = 0;

  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  get(hash: string): Uint8Array | undefined {
    const b = this.blobs.get(hash);
    if (b) {
      this.blobs.delete(hash);
      this.blobs.set(hash, b);
    }
    return b;
  }

  has(hash: string): boolean {
    return this.blobs.has(hash);
  }

  set(hash: string, bytes: Uint8Array): void {
    if (bytes.byteLength > this.maxBytes / 4 || this.blobs.has(hash)) return;
    this.blobs.set(hash, bytes);
    this.bytes += bytes.byteLength;
    while (this.bytes > this.maxBytes) {
      const [oldest, b] = this.blobs.entries().next().value as [string, Uint8Array];
      this.blobs.delete(oldest);
      this.bytes -= b.byteLength;
    }
  }
}
