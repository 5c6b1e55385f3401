/**
 * Where a staging folder is, and the folders discard() retired: renamed to a `<stagingDir>.discarded-<random>` sibling in one step,
 * deleted afterwards (in the background), and found again by the next open() if a process died in between.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { atomicWrite, fsyncDir, isCode, lstatOrNull } from './durable';
import { BLOBS_DIR, MARKER_FILE } from './manifest';

/** Between a staging folder's name and the random suffix of the folder discard() moves it to. */
export const DISCARDED_INFIX = '.discarded-';

/** Deletes retired folders and makes the deletion durable; returns the failure instead of throwing it. */
export async function removeRetired(stagingDir: string, retired: string[]): Promise<unknown> {
  if (retired.length === 0) return null;
  try {
    for (const dir of retired) await fs.rm(dir, { recursive: true, force: true });
    await fsyncDir(path.dirname(stagingDir));
  } catch (err) {
    if (!isCode(err, 'ENOENT')) return err;
  }
  return null;
}

/** Folders a process that crashed between discard() and its background deletion left beside the staging area. */
export async function findRetired(stagingDir: string): Promise<string[]> {
  const parent = path.dirname(stagingDir);
  const prefix = `${path.basename(stagingDir)}${DISCARDED_INFIX}`;
  try {
    return (await fs.readdir(parent)).filter((n) => n.startsWith(prefix)).map((n) => path.join(parent, n));
  } catch {
    return [];
  }
}

/** The staging folder with symlinks in its existing part resolved, so containment checks compare real paths. */
export async function canonicalStaging(p: string): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch {
    try {
      return path.join(await fs.realpath(path.dirname(p)), path.basename(p));
    } catch {
      return p;
    }
  }
}

/**
 * Makes the staging folder: the marker first, then `blobs/`, so a process opening the folder at the same moment
 * never finds it non-empty without its marker (only, at most, the marker's own temp file: `isMarkerTemp`).
 */
export async function makeStagingArea(stagingDir: string): Promise<void> {
  await fs.mkdir(stagingDir, { recursive: true, mode: 0o700 });
  const marker = path.join(stagingDir, MARKER_FILE);
  if ((await lstatOrNull(marker)) === null)
    await atomicWrite(marker, 'staging area of a Jukebox StagedWorkspace; see docs/shadow-booth.md\n', 0o600);
  await fs.mkdir(path.join(stagingDir, BLOBS_DIR), { recursive: true, mode: 0o700 });
}

/** The temp file the marker is written through (atomicWrite's `.<name>.<random>.tmp`). */
export function isMarkerTemp(name: string): boolean {
  return name.startsWith(`.${MARKER_FILE}.`) && name.endsWith('.tmp');
}
