/**
 * Group commit for one tape writer: callers that appended while an fsync was in flight share the next one, so
 * steps that finish together (parallel tool calls of one workflow task) pay one fsync between them, and local
 * steps can leave theirs to their workflow task's barrier. Nobody is told "durable" before an fsync that
 * started after their append has finished.
 */
import { type TapeWriter, TapeWriterUnavailableError } from './tape';
import type { RecorderTimings } from './timings';

export class WriterSync {
  /** Append batches written through the writer, and how many of them a finished fsync covers. */
  private written = 0;
  private synced = 0;
  /** The last batch someone will wait to see durable (a step-closing one); later ones are not owed an fsync. */
  private owed = 0;
  private syncing: Promise<void> | undefined;
  private closed = false;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly writer: TapeWriter,
    private readonly timings?: RecorderTimings,
  ) {}

  /**
   * Counts one append batch; returns its number for through(). `owed`: the batch closes a step, so its fsync is
   * owed (now, or by the barrier or the deadline) even if the writer closes first. A batch that is not (a step's
   * request, written before its I/O) becomes durable with the step's closing fsync, which covers the whole file
   * whichever writer issues it.
   */
  wrote(owed = true): number {
    this.written++;
    if (owed) this.owed = this.written;
    return this.written;
  }

  get pending(): boolean {
    return this.synced < this.written;
  }

  /** Resolves once an fsync covers batch `gen` (default: everything written so far). */
  async through(gen = this.written): Promise<void> {
    while (this.synced < gen) {
      if (this.syncing) {
        await this.syncing.catch(() => {});
        continue;
      }
      if (this.closed)
        throw new TapeWriterUnavailableError(
          `tape ${this.writer.path}: the writer closed before its last frames were fsynced; the step must be recorded again`,
        );
      const target = this.written;
      const t0 = performance.now();
      const syncing = this.writer.sync().then(() => {
        this.synced = Math.max(this.synced, target);
        if (!this.pending) clearTimeout(this.deadline);
        if (this.timings) {
          this.timings.syncs++;
          this.timings.syncMs += performance.now() - t0;
        }
      });
      this.syncing = syncing;
      try {
        await syncing;
      } finally {
        if (this.syncing === syncing) this.syncing = undefined;
      }
    }
  }

  /** Everything written so far is durable by other means (the writer's own fsync, as seal() does). */
  covered(): void {
    this.synced = this.written;
    clearTimeout(this.deadline);
  }

  /** Makes what is written durable within `ms` at the latest, unless through() gets there first. */
  within(ms: number): void {
    if (this.deadline || this.closed) return;
    this.deadline = setTimeout(() => {
      this.deadline = undefined;
      // A failed fsync poisons the writer, so the run's next append fails its step: nothing is lost silently.
      if (!this.closed) void this.through().catch(() => {});
    }, ms);
    // unref: a pending deadline must not keep a finished process alive (close() syncs what is left).
    this.deadline.unref();
  }

  /**
   * Finishes an fsync under way and makes what is owed durable, then refuses further syncs. Call before closing
   * the writer. Batches nobody is owed an fsync for are left to the step's closing fsync (through another writer
   * of the same file, if this one closes first): an fsync per closed writer would double a step's fsyncs
   * whenever writers are closed for other tapes.
   */
  async close(): Promise<void> {
    clearTimeout(this.deadline);
    if (this.syncing) await this.syncing.catch(() => {});
    if (this.synced < this.owed) await this.through(this.owed).catch(() => {});
    this.closed = true;
  }
}
