/**
 * The bytes of a tape that is still being written, for a cursor that follows it. The size is what the file
 * held when last refreshed, so one pass of the cursor sees a fixed file; the read window is dropped at every
 * refresh, because the bytes past the last complete frame (a torn tail) may be truncated and written again by
 * the next worker that appends.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { ByteSource } from '../recorder/tape/source';

const WINDOW = 256 * 1024;

export class TailSource implements ByteSource {
  readonly name: string;
  private fd: number;
  private bytes = 0;
  private window: Uint8Array = new Uint8Array(0);
  private windowStart = 0;

  constructor(path: string) {
    this.name = path;
    this.fd = openSync(path, 'r');
    this.refresh();
  }

  get size(): number {
    return this.bytes;
  }

  /** Reads the file's current length; true when it changed. */
  refresh(): boolean {
    const size = fstatSync(this.fd).size;
    this.window = new Uint8Array(0);
    if (size === this.bytes) return false;
    this.bytes = size;
    return true;
  }

  read(offset: number, length: number): Uint8Array {
    const n = Math.max(0, Math.min(length, this.bytes - offset));
    const from = offset - this.windowStart;
    if (from >= 0 && from + n <= this.window.byteLength) return this.window.subarray(from, from + n);
    const want = Math.max(n, Math.min(WINDOW, this.bytes - offset));
    const into = new Uint8Array(want);
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, into, got, want - got, offset + got);
      if (r === 0) break;
      got += r;
    }
    // A new window each time: frames the cursor returned keep views into the old one.
    this.window = into.subarray(0, got);
    this.windowStart = offset;
    return this.window.subarray(0, Math.min(n, got));
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
