/**
 * The content store in a folder (the tape folder's `content/`), shared by the worker processes and clients of one
 * host or of hosts that share the filesystem. One file per blob, named by its hash; a blob is written to a temp
 * file and renamed into place, so a name that exists holds whole bytes, and the batch's files and the folder are
 * fsynced together, so a batch is durable when put() resolves.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fdatasync,
  fsync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  write,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BlobCache, type ContentStore, type ContentTimings, verifyBlob } from './contentStore';
import { ContentMissingError } from './errors';

export const CONTENT_DIR = 'content';

export interface FolderContentStoreOptions {
  /** Bytes of verified blobs kept in memory (default 64 MiB). */
  cacheBytes?: number;
  /** false: no fsyncs (benchmarks and throwaway runs, like the tape store's `fsync: 'none'`). */
  durable?: boolean;
  /** Counts the blobs written and the waits for the disk, with their time (benchmarks). */
  timings?: ContentTimings;
}

export class FolderContentStore implements ContentStore {
  readonly dir: string;
  private readonly cache: BlobCache;
  private readonly durable: boolean;
  private readonly timings: ContentTimings | undefined;
  // Blobs this process knows to be in the folder and durable: a resent conversation costs no stat per blob.
  private readonly known = new Set<string>();
  private made = false;

  constructor(dir: string, options: FolderContentStoreOptions = {}) {
    this.dir = path.resolve(dir);
    this.cache = new BlobCache(options.cacheBytes);
    this.durable = options.durable ?? true;
    this.timings = options.timings;
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
    if (!this.made) {
      mkdirSync(this.dir, { recursive: true });
      this.made = true;
    }
    // A blob is a few KB into the page cache: its stat, open, write, close and rename run on this thread, in
    // microseconds, where each as an async call is a round trip through libuv's four threads, queued behind
    // the tape's and this store's own fsyncs (milliseconds on a busy worker, on every step's critical path).
    // Only the fsyncs, which wait for the disk, and the writes of large blobs go to the thread pool.
    const fds: number[] = [];
    let tmp: string | undefined;
    try {
      for (const [hash, bytes] of fresh) {
        const target = this.file(hash);
        // Another process (or an earlier life of this one) may have put it: whole, it needs only the fsync
        // below (that process's may still be under way). Its bytes are checked, since a name renamed in before
        // a crash can hold less than it should (see below).
        if (holds(target, hash, bytes.byteLength, this.dir)) {
          fds.push(openSync(target, 'r'));
          continue;
        }
        tmp = path.join(this.dir, `.${hash}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
        const fd = openSync(tmp, 'wx');
        fds.push(fd);
        if (bytes.byteLength <= SYNC_WRITE_BYTES) writeAllSync(fd, bytes);
        else await writeAll(fd, bytes);
        // The name holds whole bytes from the moment it exists: a reader in another process sees all of the
        // blob or none of it.
        renameSync(tmp, target);
        tmp = undefined;
      }
      // The blobs' bytes and their names made durable together: one wait for the disk, not one for the bytes
      // and then one for the names. Nothing refers to a blob before put() resolves, so a crash in between
      // leaves at worst a name with short bytes that no history names, which the check above rewrites and
      // get() reports as damaged.
      const t = this.timings;
      if (t) {
        t.blobsWritten += fds.length;
        for (const [, bytes] of fresh) t.bytesWritten += bytes.byteLength;
      }
      if (this.durable) {
        const t0 = t ? performance.now() : 0;
        await Promise.all([...fds.map(fdatasyncAsync), syncDir(this.dir)]);
        if (t) {
          t.diskWaits++;
          t.diskWaitMs += performance.now() - t0;
        }
      }
    } finally {
      for (const fd of fds) closeSync(fd);
      if (tmp) rmSync(tmp, { force: true });
    }
    for (const [hash, bytes] of fresh) {
      this.known.add(hash);
      this.cache.set(hash, bytes);
    }
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

/** Whether `file` exists with exactly the blob's bytes (read back only when its size matches). */
function holds(file: string, hash: string, size: number, store: string): boolean {
  if (statSync(file, { throwIfNoEntry: false })?.size !== size) return false;
  try {
    verifyBlob(hash, readFileSync(file), store);
    return true;
  } catch {
    return false;
  }
}

/** Blobs up to this size are written on the calling thread (a page-cache copy); larger ones in the pool. */
const SYNC_WRITE_BYTES = 256 * 1024;

function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.byteLength; ) at += writeSync(fd, bytes, at, bytes.byteLength - at);
}

async function writeAll(fd: number, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength; )
    at += await new Promise<number>((resolve, reject) =>
      write(fd, bytes, at, bytes.byteLength - at, null, (err, n) => (err ? reject(err) : resolve(n))),
    );
}

function fdatasyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

/** One pool round trip: the folder's open and close are on this thread, only its fsync waits for the disk. */
async function syncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await new Promise<void>((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
  } finally {
    closeSync(fd);
  }
}
