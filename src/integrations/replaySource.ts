import type { Tape } from '../recorder/tape';
import { ReplayBook } from './replayBook';

/** A tape path, a read tape, or a book shared by several clients (so they consume one tape together). */
export type ReplaySource = string | Tape | ReplayBook;

export function replayBookOf(source: ReplaySource | undefined): ReplayBook | undefined {
  if (source === undefined) return undefined;
  return source instanceof ReplayBook ? source : ReplayBook.fromTape(source);
}
