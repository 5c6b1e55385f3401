/**
 * `followRun`: a run's items as they are recorded, read from its tape. The tape is the run's durable, ordered
 * log: every frame is appended once, under the tape lock, by whichever worker runs the step, and never changed
 * after (a torn tail is cut only past the last complete frame). So a frame's index is a stable position, and
 * a follower that resumes after the last position it saw gets every later frame once, in order, whichever
 * worker wrote it and however many workers died in between (docs/streaming.md).
 */

import type { TapeStore } from '../recorder/store';
import { FolderTapeStore, tapeDirFromEnv } from '../recorder/store';
import { TapeCursor, TapeError } from '../recorder/tape';
import { FollowOptionsError } from './errors';
import { AttemptBook, itemOf, type RunItem } from './items';
import { locateTape } from './locate';
import { TailSource } from './tailSource';
import { TapeWatch } from './watch';

export interface FollowRunOptions {
  /** Resume after this position (the last item's `position` a client saw); default: from the run's start. */
  after?: number;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
  /** The folder the run's workers record into; default `$JUKEBOX_TAPE_DIR`, else `.jukebox/tapes`. */
  tapesDir?: string;
  /** A folder tape store, instead of `tapesDir`. */
  store?: TapeStore;
  /** The run's first execution id, when its workflow id was used by more than one run (default: the newest). */
  runId?: string;
  /** How long to wait for the run's tape to appear (default 60 s): a run's first step creates it. */
  appearWithinMs?: number;
  /** The longest a follower waits before it looks at the tape again if no change was reported (default 250 ms). */
  pollMs?: number;
}

/** Consecutive failed reads of one frame at the tail of an unsealed tape before the failure is reported. */
const TAIL_RETRIES = 20;

function dirOf(options: FollowRunOptions): string {
  if (options.store && options.tapesDir)
    throw new FollowOptionsError('followRun: pass either store or tapesDir, not both');
  if (options.store) {
    if (!(options.store instanceof FolderTapeStore))
      throw new FollowOptionsError(
        `followRun follows tapes in a folder; the store given records into ${options.store.location}. ` +
          'Follow the run from the folder its workers record into (tapesDir)',
      );
    return options.store.dir;
  }
  return options.tapesDir ?? tapeDirFromEnv();
}

function checkAfter(after: number | undefined): number {
  if (after === undefined) return -1;
  if (!Number.isSafeInteger(after) || after < -1)
    throw new FollowOptionsError(
      `followRun: after must be an item's position (an integer >= 0), or -1 for the start; got ${after}`,
    );
  return after;
}

/**
 * Every item of the run after `options.after`, as it is recorded, ending after the `outcome` item when the run's
 * tape is sealed. Each item comes once, in tape order; a retried step's items carry their `attempt`, and its
 * first (`step`) item names the attempt it supersedes in `retryOf`.
 */
export function followRun(workflowId: string, options: FollowRunOptions = {}): AsyncIterable<RunItem> {
  const dir = dirOf(options);
  const after = checkAfter(options.after);
  return {
    async *[Symbol.asyncIterator]() {
      const file = await locateTape(dir, workflowId, {
        ...(options.runId !== undefined ? { runId: options.runId } : {}),
        waitMs: options.appearWithinMs ?? 60_000,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (file !== undefined) yield* follow(file, after, options);
    },
  };
}

export interface FollowTapeOptions {
  after?: number;
  signal?: AbortSignal;
  pollMs?: number;
}

/** `followRun` over one tape file (what `jbx view`'s event stream serves): the same items, the same rules. */
export function followTape(file: string, options: FollowTapeOptions = {}): AsyncIterable<RunItem> {
  const after = checkAfter(options.after);
  return { [Symbol.asyncIterator]: () => follow(file, after, options) };
}

async function* follow(file: string, after: number, options: FollowTapeOptions): AsyncGenerator<RunItem> {
  const { signal } = options;
  const source = new TailSource(file);
  const watch = new TapeWatch(file, options.pollMs ?? 250);
  try {
    const cursor = new TapeCursor(source, { name: file });
    const tape = { blobs: cursor.blobs, attempts: new AttemptBook(), runId: cursor.header.runId };
    let failures = 0;
    for (;;) {
      if (signal?.aborted) return;
      let frame: ReturnType<TapeCursor['next']>;
      try {
        frame = cursor.next();
        failures = 0;
      } catch (err) {
        // At the tail of a tape still being written, a read can meet bytes a restarting writer is cutting off
        // (a torn frame): the cursor's state is unchanged by a failed frame, so look again. Damage that stays
        // is reported.
        if (cursor.sealed || !(err instanceof TapeError) || ++failures > TAIL_RETRIES) throw err;
        frame = undefined;
      }
      if (frame) {
        // Frames before the resume point are verified and give nothing, but a retry's mark needs their attempts.
        if (frame.index <= after) {
          if (frame.kind === 'activity.start') itemOf(frame, tape);
          continue;
        }
        const item = itemOf(frame, tape);
        if (item) yield item;
        continue;
      }
      if (cursor.sealed) {
        // The frame before the seal is the outcome: the last position an item can have.
        const last = cursor.frameCount - 2;
        if (after > last)
          throw new FollowOptionsError(
            `followRun: position ${after} is past the end of the tape ${file} (its last item is at ` +
              `position ${last}); resume after a position a follower received`,
          );
        return;
      }
      // The end of what is written so far: wait for more.
      cursor.done = false;
      cursor.tornTail = null;
      if (!source.refresh() || failures > 0) {
        await watch.next(signal);
        source.refresh();
      }
    }
  } finally {
    watch.close();
    source.close();
  }
}
