/**
 * The content store in an S3-compatible bucket, beside the tapes of the object tape store: one object per blob,
 * `<prefix>content/<hash>`, created with `If-None-Match: *` (a blob another host stored first is the same bytes).
 * A PUT that returned is durable; reads are checked against the name.
 */
import { ObjectStoreError } from '../errors';
import type { ObjectBucket } from '../objectBucket';
import { BlobCache, type ContentStore, verifyBlob } from './contentStore';
import { ContentMissingError } from './errors';

/** Requests in flight at once for one batch. */
const CONCURRENCY = 16;

export interface ObjectContentStoreOptions {
  bucket: ObjectBucket;
  /** The tape store's prefix (`''` or ending in `/`); blobs go under `<prefix>content/`. */
  prefix?: string;
  cacheBytes?: number;
  /** Whether close() also closes the bucket's client (default true). */
  ownsBucket?: boolean;
}

export class ObjectContentStore implements ContentStore {
  readonly bucket: ObjectBucket;
  readonly prefix: string;
  private readonly cache: BlobCache;
  private readonly known = new Set<string>();
  private readonly ownsBucket: boolean;

  constructor(options: ObjectContentStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = `${options.prefix ?? 'tapes/'}content/`;
    this.cache = new BlobCache(options.cacheBytes);
    this.ownsBucket = options.ownsBucket ?? true;
  }

  get location(): string {
    return this.bucket.url(this.prefix);
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    const fresh = [...blobs].filter(([hash]) => !this.known.has(hash));
    await inBatches(fresh, async ([hash, bytes]) => {
      await this.bucket.putIfAbsent(this.prefix + hash, bytes);
      this.known.add(hash);
      this.cache.set(hash, bytes);
    });
  }

  async get(hash: string): Promise<Uint8Array> {
    const hit = this.cache.get(hash);
    if (hit) return hit;
    let bytes: Uint8Array;
    try {
      bytes = await this.bucket.get(this.prefix + hash);
    } catch (err) {
      if (err instanceof ObjectStoreError && err.status === 404)
        throw new ContentMissingError(hash, this.location, {}, err);
      throw err;
    }
    verifyBlob(hash, bytes, this.location);
    this.known.add(hash);
    this.cache.set(hash, bytes);
    return bytes;
  }

  async close(): Promise<void> {
    if (this.ownsBucket) this.bucket.destroy();
  }
}

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += CONCURRENCY)
    await Promise.all(items.slice(i, i + CONCURRENCY).map(fn));
}
