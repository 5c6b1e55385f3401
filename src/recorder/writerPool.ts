/**
 * The tape writers one process keeps open, within a budget of open files (`maxOpenTapes`). A writer is held by
 * the caller appending through it from take()/open() until give()/retire()/drop(), and a held writer is never
 * closed. At the budget, a caller that needs another writer closes the least recently used idle one, or, with
 * none idle, waits until one is given back: the budget holds (closing writers count until their file is
 * closed), and nobody loses a writer mid-append. A writer closed cleanly parks its state, so its tape resumes
 * in O(1) on the next append instead of being read and verified again (TapeWriter.resume). See
 * docs/tape-store.md, "At the open-file limit".
 */
import type { TapeWriter, TapeWriterState } from './tape';

/** A run's tape as one process holds it between appends. */
export interface Entry {
  writer: TapeWriter | undefined;
  /** Highest `seq` of a random/clock frame on the tape, so a retried activity does not record them twice. */
  observedSeq: number;
  sealed: boolean;
  /** File size when the entry was last known to match the file. */
  size: number;
}

/** What a closed writer left to resume its tape from, valid while the file is still `size` bytes long. */
export interface ParkedTape {
  size: number;
  observedSeq: number;
  sealed: boolean;
  /** Absent for a sealed tape, which takes no more frames. */
  state: TapeWriterState | undefined;
}

export interface WriterPoolOptions {
  /** Writers open at once, closing ones included (default 32). */
  maxOpen?: number;
  /** A writer nobody holds for this long is closed (default 5 s); it resumes on the next append. */
  idleCloseMs?: number;
  /** Parked states kept, least recently parked dropped first (default 4096); a dropped one costs a reopen. */
  maxParked?: number;
  /** Runs before a writer closes, e.g. to fsync what it wrote but has not synced yet. */
  beforeClose?: (writer: TapeWriter) => Promise<void>;
}

interface Slot {
  entry: Entry;
  holders: number;
  idle: NodeJS.Timeout | undefined;
}

export class WriterPool {
  readonly maxOpen: number;
  private readonly idleCloseMs: number;
  private readonly maxParked: number;
  private readonly beforeClose: ((writer: TapeWriter) => Promise<void>) | undefined;
  /** Open writers, least recently used first. */
  private readonly open = new Map<string, Slot>();
  private readonly parked = new Map<string, ParkedTape>();
  private readonly closingFiles = new Map<string, Promise<void>>();
  /** Writers open, opening or closing: each holds (or is about to hold, or still holds) a file descriptor. */
  private used = 0;
  private closingCount = 0;
  private peak = 0;
  /** Callers waiting for a writer slot, first come first served. */
  private readonly waiters: (() => void)[] = [];

  constructor(options: WriterPoolOptions = {}) {
    this.maxOpen = Math.max(1, options.maxOpen ?? 32);
    this.idleCloseMs = options.idleCloseMs ?? 5_000;
    this.maxParked = options.maxParked ?? 4096;
    this.beforeClose = options.beforeClose;
  }

  /** Writers open now (closing ones included), and the most there ever were at once. */
  get openCount(): number {
    return this.used;
  }
  get peakOpen(): number {
    return this.peak;
  }
  /** Callers waiting for a writer because every slot is held. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** The open entry of `file`, without holding it (a barrier's look at its pending fsync). */
  peek(file: string): Entry | undefined {
    return this.open.get(file)?.entry;
  }

  /** Holds the open entry of `file`, if there is one; give it back with give(), retire() or drop(). */
  take(file: string): Entry | undefined {
    const slot = this.open.get(file);
    if (!slot) return undefined;
    clearTimeout(slot.idle);
    slot.idle = undefined;
    slot.holders++;
    // Most recently used last.
    this.open.delete(file);
    this.open.set(file, slot);
    return slot.entry;
  }

  /** What the last writer of `file` left when it closed, taken out of the pool (it is good for one resume). */
  unpark(file: string): ParkedTape | undefined {
    const p = this.parked.get(file);
    this.parked.delete(file);
    return p;
  }

  /** Resolves once a writer of `file` that is closing has closed (its last frames fsynced first). */
  closing(file: string): Promise<void> | undefined {
    return this.closingFiles.get(file);
  }

  /**
   * Opens an entry for `file` with `make` once a writer slot is free, and holds it. An entry `make` returns
   * without a writer (a sealed tape) takes no slot and is not kept.
   */
  async openWith(file: string, make: () => Promise<Entry>): Promise<Entry> {
    if (this.open.has(file)) throw new Error(`writer pool: ${file} is open already`);
    await this.reserve();
    let entry: Entry;
    try {
      entry = await make();
    } catch (err) {
      this.free();
      throw err;
    }
    if (!entry.writer) {
      this.free();
      return entry;
    }
    if (this.open.has(file)) {
      // Two openers of one file: the stores serialize a tape's callers, so this is a bug, not a race to resolve.
      await entry.writer.close().catch(() => {});
      this.free();
      throw new Error(`writer pool: ${file} was opened twice`);
    }
    this.open.set(file, { entry, holders: 1, idle: undefined });
    return entry;
  }

  /** Gives back a held entry: it stays open for the next append, or closes after idleCloseMs without one. */
  give(file: string, entry: Entry): void {
    const slot = this.open.get(file);
    if (!slot || slot.entry !== entry) return;
    slot.holders = Math.max(0, slot.holders - 1);
    if (slot.holders > 0) return;
    slot.idle = setTimeout(() => {
      if (this.open.get(file) === slot && slot.holders === 0) void this.close(file, slot, true);
    }, this.idleCloseMs);
    // unref: an idle tape must not keep a finished process alive.
    slot.idle.unref();
    // A caller may be waiting for a slot that this idle writer can free.
    this.pump();
  }

  /**
   * Gives back a held entry whose tape is finished (sealed): its writer closes now, and what is parked is only
   * that the tape is sealed, so a late caller learns it without reading the tape.
   */
  async retire(file: string, entry: Entry): Promise<void> {
    const slot = this.open.get(file);
    if (slot && slot.entry === entry) await this.close(file, slot, true);
    else this.park(file, entry, undefined);
  }

  /**
   * Gives back a held entry that must not be used again (its writer failed, or is behind the file): its writer
   * closes now and nothing is parked, so the next append reads the tape from the file.
   */
  async drop(file: string, entry: Entry): Promise<void> {
    this.parked.delete(file);
    const slot = this.open.get(file);
    if (slot && slot.entry === entry) await this.close(file, slot, false);
  }

  /** Closes every writer (shutdown): what they wrote is fsynced first by beforeClose. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map(([file, slot]) => this.close(file, slot, false)));
    await Promise.all([...this.closingFiles.values()]);
    this.parked.clear();
  }

  private reserve(): Promise<void> {
    if (this.used < this.maxOpen && this.waiters.length === 0) {
      this.claim();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      this.pump();
    });
  }

  private claim(): void {
    this.used++;
    if (this.used > this.peak) this.peak = this.used;
  }

  private free(): void {
    this.used--;
    this.pump();
  }

  /** Hands free slots to waiters in order, and closes idle writers for the waiters no closing writer covers. */
  private pump(): void {
    while (this.waiters.length > 0 && this.used < this.maxOpen) {
      this.claim();
      this.waiters.shift()!();
    }
    let needed = this.waiters.length - this.closingCount;
    for (const [file, slot] of this.open) {
      if (needed <= 0) break;
      if (slot.holders > 0) continue;
      void this.close(file, slot, true);
      needed--;
    }
  }

  private close(file: string, slot: Slot, park: boolean): Promise<void> {
    // Leaves the open set at once, so nobody takes a writer that is closing.
    this.open.delete(file);
    clearTimeout(slot.idle);
    this.closingCount++;
    const writer = slot.entry.writer;
    const done = (async () => {
      let clean = false;
      try {
        if (writer) {
          await this.beforeClose?.(writer);
          await writer.close();
        }
        clean = true;
      } catch {
        // A writer that fails to close leaves nothing parked: the next append reopens and verifies the file.
      }
      if (park && clean) this.park(file, slot.entry, writer?.state());
      this.closingCount--;
      this.free();
    })();
    void done.then(() => {
      if (this.closingFiles.get(file) === done) this.closingFiles.delete(file);
    });
    this.closingFiles.set(file, done);
    return done;
  }

  private park(file: string, entry: Entry, state: TapeWriterState | undefined): void {
    if (!state && !entry.sealed) return;
    this.parked.delete(file);
    this.parked.set(file, {
      size: state?.offset ?? entry.size,
      observedSeq: entry.observedSeq,
      sealed: entry.sealed,
      state,
    });
    if (this.parked.size > this.maxParked) this.parked.delete(this.parked.keys().next().value as string);
  }
}
