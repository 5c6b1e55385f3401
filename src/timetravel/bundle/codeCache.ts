/**
 * V8's code cache for the workflow bundles replay evaluates. A stored bundle is 2 MB of webpack output; parsing
 * and compiling it is most of what `jbx replay TAPE` does besides starting Node. The compiled code (taken after
 * the workflows module is imported, so the functions that ran are in it) is kept per user, keyed by the code's
 * SHA-256, V8's version and the architecture; V8 itself rejects data made from other source or flags, and a
 * rejected or missing cache is only slower. Nothing here fails a replay: an unwritable folder means no cache.
 *
 * Folder: JUKEBOX_CODE_CACHE_DIR (`off` switches the cache off), else $XDG_CACHE_HOME/jukebox/v8, else
 * ~/.cache/jukebox/v8, made readable by its owner only (V8 trusts the data it is given).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';

export type CodeCacheStatus = 'hit' | 'miss' | 'rejected' | 'off';

export interface CachedScript {
  script: vm.Script;
  /** hit: compiled from the cache; miss: no cache yet; rejected: V8 refused the cached data; off: no cache. */
  status: CodeCacheStatus;
  /** After the script ran: stores its code cache when it did not come from one (best effort). */
  save(): void;
}

export function codeCacheDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const dir = env.JUKEBOX_CODE_CACHE_DIR;
  if (dir === 'off') return null;
  if (dir) return path.resolve(dir);
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'jukebox', 'v8');
}

/** `new vm.Script(code)` with the cached compilation of the same code when there is one. */
export function compileWithCache(code: string, filename: string): CachedScript {
  const dir = codeCacheDir();
  if (!dir) return { script: new vm.Script(code, { filename }), status: 'off', save: () => {} };
  const key = createHash('sha256').update(code).digest('hex');
  const file = path.join(dir, `${key}-${process.versions.v8}-${process.arch}.bin`);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(file);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(code, { filename, ...(cachedData ? { cachedData } : {}) });
  const status: CodeCacheStatus = !cachedData ? 'miss' : script.cachedDataRejected ? 'rejected' : 'hit';
  return {
    script,
    status,
    save() {
      if (status === 'hit') return;
      // Written aside and renamed, so a replay in another process or thread never reads half a file.
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
        renameSync(tmp, file);
      } catch {
        try {
          rmSync(tmp, { force: true });
        } catch {
          // the folder itself could not be made: nothing was written
        }
      }
    },
  };
}
