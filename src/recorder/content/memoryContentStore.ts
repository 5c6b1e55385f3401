/**
 * A content store held in memory: the blobs a `.jbxb` bundle carries for the claims in its histories, so a
 * bundle's Temporal replay needs no store of the recording deployment (src/timetravel/bundle/BUNDLE.md).
 */
import { type ContentStore, verifyBlob } from './contentStore';
import { ContentMissingError } from './errors';

export class MemoryContentStore implements ContentStore {
  readonly blobs: Map<string, Uint8Array>;

  constructor(
    blobs: ReadonlyMap<string, Uint8Array> = new Map(),
    readonly location = 'memory',
  ) {
    this.blobs = new Map(blobs);
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const [hash, bytes] of blobs) this.blobs.set(hash, verifyBlob(hash, bytes, this.location));
  }

  async get(hash: string): Promise<Uint8Array> {
    const bytes = this.blobs.get(hash);
    if (!bytes) throw new ContentMissingError(hash, this.location);
    return verifyBlob(hash, bytes, this.location);
  }

  async close(): Promise<void> {}
}
