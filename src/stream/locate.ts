/**
 * Finds the tape of a run in a folder of tapes by its workflow id. The file is named after the workflow id
 * and the run's first execution id (src/recorder/naming.ts), and every segment of a run that continued as
 * new appends to that one file, so a workflow id names one tape, unless the id was reused by a later run:
 * then the newest tape is the one followed, or the one `runId` names.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { tapeFileName } from '../recorder/naming';
import { openTape } from '../recorder/tape';
import { RunTapeNotFoundError } from './errors';

const LOOK_EVERY_MS = 100;

function headerOf(file: string): { workflowId: string; createdAtMs: number } | undefined {
  try {
    const cursor = openTape(file, { keepBlobs: false });
    try {
      return { workflowId: cursor.header.workflowId, createdAtMs: cursor.header.createdAtMs };
    } finally {
      cursor.close();
    }
  } catch {
    // Not a tape this follower can read the header of: not the run's.
    return undefined;
  }
}

async function lookOnce(dir: string, workflowId: string, runId?: string): Promise<string | undefined> {
  if (runId !== undefined) {
    const file = path.join(dir, tapeFileName(workflowId, runId));
    return existsSync(file) ? file : undefined;
  }
  // `<workflowId, sanitized>--`: the file name up to the run id.
  const prefix = tapeFileName(workflowId, 'x').slice(0, -'x.jbx'.length);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let best: { file: string; createdAtMs: number } | undefined;
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.jbx')) continue;
    const file = path.join(dir, name);
    // Another workflow's id can share the prefix (`a` and `a--b`): the header says whose tape it is.
    const h = headerOf(file);
    if (h?.workflowId !== workflowId) continue;
    if (!best || h.createdAtMs > best.createdAtMs) best = { file, createdAtMs: h.createdAtMs };
  }
  return best?.file;
}

/** The tape's path, waiting up to `waitMs` for it to appear (a run's first step creates it); undefined if aborted. */
export async function locateTape(
  dir: string,
  workflowId: string,
  options: { runId?: string; waitMs: number; signal?: AbortSignal },
): Promise<string | undefined> {
  const started = Date.now();
  for (;;) {
    if (options.signal?.aborted) return undefined;
    const found = await lookOnce(dir, workflowId, options.runId);
    if (found) return found;
    if (Date.now() - started >= options.waitMs)
      throw new RunTapeNotFoundError(workflowId, dir, options.waitMs);
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, LOOK_EVERY_MS);
      options.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          resolve();
        },
        { once: true },
      );
    });
  }
}
