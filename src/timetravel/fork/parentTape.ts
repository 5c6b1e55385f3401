/**
 * Reading a parent tape for a fork: its timeline (cached per worker process, keyed by the pinned prefix hash,
 * since every inherited step of a fork reads the same parent) and the chain value that pins the inherited prefix.
 */
import { readTimeline, type Timeline } from '../replay/timeline';
import { ParentTapeChangedError } from './errors';

/** Index of the first frame the fork does not inherit: the first frame of `forkStep` or later. */
export function forkFrameIndex(t: Timeline, forkStep: number): number {
  const i = t.tape.frames.findIndex((f) => f.step >= forkStep && f.kind !== 'seal');
  return i === -1 ? t.tape.frames.length : i;
}

/** FORMAT.md `parent.tapeHash`: the chain after the last inherited frame (the header checksum if none). */
export function inheritedChain(t: Timeline, forkStep: number): string {
  const i = forkFrameIndex(t, forkStep);
  let last = i - 1;
  // A fork at or past the outcome inherits the steps, not the outcome and seal.
  while (last >= 0 && (t.tape.frames[last]!.kind === 'seal' || t.tape.frames[last]!.kind === 'outcome'))
    last--;
  return last >= 0 ? t.tape.frames[last]!.chain : t.tape.headerChecksum;
}

const cache = new Map<string, Timeline>();

/** The parent's timeline, after checking that its prefix still hashes to what the fork pinned. */
export function parentTimeline(file: string, tapeHash: string, forkStep: number): Timeline {
  const key = `${file}#${tapeHash}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const t = readTimeline(file);
  const actual = inheritedChain(t, forkStep);
  if (actual !== tapeHash) throw new ParentTapeChangedError(file, tapeHash, actual);
  if (cache.size > 16) cache.delete(cache.keys().next().value as string);
  cache.set(key, t);
  return t;
}
