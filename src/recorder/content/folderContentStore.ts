/**
 * The content store in a folder (the tape folder's `content/`), shared by the worker processes and clients of one
 * host or of hosts that share the filesystem. One file per blob, named by its hash; a blob is written to a temp
 * file, fdatasynced and renamed into place, and the folder is fsynced once per batch, so a name that exists
 * always holds whole bytes and a batch is durable when put() resolves.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { BlobCache, type ContentStore, verifyBlob } from './contentStore';
import { ContentMissingError } from './errors';

export const CONTENT_DIR = 'content';

export interface FolderContentStoreOptions {
  /** Bytes of verified blobs kept in memory (default 64 MiB). */
  cacheBytes?: number;
  /** false: no fsyncs (benchmarks and throwaway runs, like the tape store's `fsync: 'none'`). */
  durable?: boolean;
}

export class FolderContentStore implements ContentStore {
  readonly dir: string;
  private readonly cache: BlobCache;
  private readonly durable: boolean;
  // Blobs this process knows to be in the folder and durable: a resent conversation costs no stat per blob.
  private readonly known = new Set<string>();
  private ready: Promise<void> | undefined;

  constructor(dir: string, options: FolderContentStoreOptions = {}) {
    this.dir = path.resolve(dir);
    this.cache = new BlobCache(options.cacheBytes);
    this.durable = options.durable ?? true;
  }

  get location(): string {
    return this.dir;
  }

  private file(hash: string): string {
    return path.join(this.dir, hash);
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    const fresh = [...blobs].filter(([hash]) => !this.known.has(hash));
    if (fresh.length === 0) return;
    this.ready ??= mkdir(this.dir, { recursive: true }).then(() => undefined);
    await this.ready;
    await Promise.all(fresh.map(([hash, bytes]) => this.write(hash, bytes)));
    // One fsync makes every new name of the batch durable (and a name another process renamed in, too).
    if (this.durable) await syncDir(this.dir);
    for (const [hash, bytes] of fresh) {
      this.known.add(hash);
      this.cache.set(hash, bytes);
    }
  }

  private async write(hash: string, bytes: Uint8Array): Promise<void> {
    const target = this.file(hash);
    const exists = await stat(target).then(
      (s) => s.size === bytes.byteLength,
      () => false,
    );
    if (exists) return;
    const tmp = path.join(this.dir, `.${hash}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const fh = await open(tmp, 'wx');
    try {
      await fh.writeFile(bytes);
      if (this.durable) await fh.datasync();
    } catch (err) {
      await fh.close().catch(() => {});
      await rm(tmp, { force: true });
      throw err;
    }
    await fh.close();
    // Same bytes under the same name: a rename over another process's copy changes nothing.
    await rename(tmp, target);
  }

  async get(hash: string): Promise<Uint8Array> {
    const hit = this.cache.get(hash);
    if (hit) return hit;
    let bytes: Uint8Array;
    try {
      bytes = await readFile(this.file(hash));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new ContentMissingError(hash, this.dir, {}, err);
      throw err;
    }
    verifyBlob(hash, bytes, this.dir);
    this.known.add(hash);
    this.cache.set(hash, bytes);
    return bytes;
  }

  async close(): Promise<void> {}
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
