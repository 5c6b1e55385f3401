/**
 * Which tape store a worker or the CLI uses: `JUKEBOX_TAPE_STORE=s3://bucket/prefix/` selects the object store
 * (every worker of a run on any host appends to one tape there), anything else the folder store
 * (`JUKEBOX_TAPE_DIR`, else `.jukebox/tapes`).
 */
import { TapeStoreConfigError } from './errors';
import { ObjectBucket } from './objectBucket';
import { ObjectTapeStore } from './objectStore';
import { FolderTapeStore, type TapeStore, type TapeStoreOptions } from './store';

/** Where the object store lives, as read from the environment. */
export interface ObjectStoreConfig {
  bucket: string;
  prefix: string;
  endpoint?: string;
  region?: string;
}

/** The object store named by `JUKEBOX_TAPE_STORE`, or undefined when it names none (the folder store). */
export function objectStoreConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): ObjectStoreConfig | undefined {
  const url = env.JUKEBOX_TAPE_STORE?.trim();
  if (!url) return undefined;
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m)
    throw new TapeStoreConfigError(
      'JUKEBOX_TAPE_STORE',
      `is "${url}"; use s3://BUCKET/PREFIX/ for an object store, or unset it and set JUKEBOX_TAPE_DIR for a folder`,
    );
  let prefix = m[2] ?? '';
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  const endpoint = env.JUKEBOX_S3_ENDPOINT?.trim() || undefined;
  if (endpoint && !/^https?:\/\/[^/]+\/?$/.test(endpoint))
    throw new TapeStoreConfigError('JUKEBOX_S3_ENDPOINT', `is "${endpoint}"; use http(s)://HOST:PORT`);
  const region = env.JUKEBOX_S3_REGION?.trim() || env.AWS_REGION?.trim() || undefined;
  return { bucket: m[1]!, prefix, ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}) };
}

export function objectTapeStore(config: ObjectStoreConfig, cacheDir?: string): ObjectTapeStore {
  return new ObjectTapeStore({
    bucket: new ObjectBucket({ bucket: config.bucket, endpoint: config.endpoint, region: config.region }),
    prefix: config.prefix,
    ...(cacheDir ? { cacheDir } : {}),
  });
}

/** An explicit `dir` always means that folder; otherwise the environment decides. */
export function tapeStoreFromEnv(
  options: TapeStoreOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): TapeStore {
  if (options.dir) return new FolderTapeStore(options);
  const config = objectStoreConfigFromEnv(env);
  return config ? objectTapeStore(config) : new FolderTapeStore(options);
}

/** True for a tape named by its object store URL, `s3://bucket/key.jbx`. */
export function isObjectTapeUrl(arg: string): boolean {
  return arg.startsWith('s3://');
}

/**
 * Fetches the tape at `s3://bucket/<tape key>` (every segment, checked to line up) into `file`, using the
 * endpoint and credentials of the environment (`JUKEBOX_S3_ENDPOINT`, `AWS_ACCESS_KEY_ID`, ...).
 */
export async function downloadObjectTape(
  url: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ segments: number; bytes: number }> {
  const m = /^s3:\/\/([^/]+)\/(.+?)\/?$/.exec(url);
  if (!m || !m[2]!.endsWith('.jbx'))
    throw new TapeStoreConfigError(
      'the tape URL',
      `"${url}" is not s3://BUCKET/PREFIX/NAME.jbx (jbx ls with JUKEBOX_TAPE_STORE set lists them)`,
    );
  const config = objectStoreConfigFromEnv({ ...env, JUKEBOX_TAPE_STORE: `s3://${m[1]}/` })!;
  const store = objectTapeStore(config);
  try {
    return await store.download(m[2]!, file);
  } finally {
    await store.close();
  }
}
