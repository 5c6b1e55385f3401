/**
 * Wakes followers when a tape file changes. One inotify watch per file per process, however many followers
 * read it, with a timer as the fallback for filesystems that report nothing (network mounts): a follower
 * never waits longer than `pollMs` to look again.
 */
import { type FSWatcher, watch } from 'node:fs';

interface Watched {
  watcher: FSWatcher | undefined;
  waiters: Set<() => void>;
  users: number;
}

const watched = new Map<string, Watched>();

function wakeAll(w: Watched): void {
  const waiters = [...w.waiters];
  w.waiters.clear();
  for (const wake of waiters) wake();
}

export class TapeWatch {
  private entry: Watched;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly pollMs: number,
  ) {
    let w = watched.get(file);
    if (!w) {
      w = { watcher: undefined, waiters: new Set(), users: 0 };
      const entry = w;
      try {
        entry.watcher = watch(file, { persistent: false }, () => wakeAll(entry));
        entry.watcher.on('error', () => {
          entry.watcher?.close();
          entry.watcher = undefined;
        });
      } catch {
        // No watch available: the timer alone paces the follower.
      }
      watched.set(file, w);
    }
    w.users++;
    this.entry = w;
  }

  /** Resolves at the file's next change, after `pollMs` at the latest, or when the signal aborts. */
  next(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.entry.waiters.delete(done);
        resolve();
      };
      if (signal?.aborted) return resolve();
      timer = setTimeout(done, this.pollMs);
      signal?.addEventListener('abort', done, { once: true });
      this.entry.waiters.add(done);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (--this.entry.users > 0) return;
    this.entry.watcher?.close();
    wakeAll(this.entry);
    watched.delete(this.file);
  }
}
