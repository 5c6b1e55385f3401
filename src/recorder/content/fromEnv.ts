/**
 * Which content store a worker, client or CLI uses: `JUKEBOX_CONTENT_DIR` names a folder outright; otherwise the
 * content store sits with the tape store (its folder's `content/`, or `<prefix>content/` in its bucket), so
 * every process that shares the tapes shares the content. Clients and workers of one run must agree on it.
 */
import path from 'node:path';
import { ObjectBucket } from '../objectBucket';
import { ObjectTapeStore } from '../objectStore';
import { FolderTapeStore, type TapeStore, tapeDirFromEnv } from '../store';
import { objectStoreConfigFromEnv } from '../storeFromEnv';
import type { ContentStore } from './contentStore';
import { CONTENT_DIR, FolderContentStore } from './folderContentStore';
import { ObjectContentStore } from './objectContentStore';

/** The content store beside `tapes`, or the one the environment names when no tape store is given. */
export function contentStoreFor(tapes?: TapeStore, env: NodeJS.ProcessEnv = process.env): ContentStore {
  const dir = env.JUKEBOX_CONTENT_DIR?.trim();
  if (dir) return new FolderContentStore(dir);
  if (tapes instanceof ObjectTapeStore)
    return new ObjectContentStore({ bucket: tapes.bucket, prefix: tapes.prefix, ownsBucket: false });
  if (tapes instanceof FolderTapeStore) return new FolderContentStore(path.join(tapes.dir, CONTENT_DIR));
  const s3 = objectStoreConfigFromEnv(env);
  if (s3)
    return new ObjectContentStore({
      bucket: new ObjectBucket({ bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region }),
      prefix: s3.prefix,
    });
  return new FolderContentStore(path.join(tapeDirFromEnv(env), CONTENT_DIR));
}

/** The content store of the tape folder `dir` (the CLI's `--dir`), unless JUKEBOX_CONTENT_DIR names another. */
export function contentStoreOfTapeDir(dir: string, env: NodeJS.ProcessEnv = process.env): ContentStore {
  return contentStoreFor(new FolderTapeStore({ dir }), env);
}
