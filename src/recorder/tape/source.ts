/**
 * Random access to tape bytes, from memory or from a file. A file is read in windows (64 KiB first, doubling
 * to 4 MiB), and a frame is a view into its window: one system call serves many frames, where a read per head
 * and per payload made the calls, not the hashing, the cost of reading a tape. A window is allocated for the
 * bytes the file holds, and a read past the window for exactly what is asked for, and callers only ask after a
 * limit check, so a hostile file never makes the reader allocate more than a limit or the file's own size.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export interface ByteSource {
  /** Path, or `<bytes>`; used in error messages. */
  readonly name: string;
  readonly size: number;
  /**
   * Up to `length` bytes from `offset`; fewer only at end of file. The view stays valid and unchanged after
   * later reads (a window is never reused), so a reader can keep it as a frame's payload.
   */
  read(offset: number, length: number): Uint8Array;
  close(): void;
}

export function bufferSource(bytes: Uint8Array, name = '<bytes>'): ByteSource {
  return {
    name,
    size: bytes.byteLength,
    read: (offset, length) =>
      bytes.subarray(Math.min(offset, bytes.byteLength), Math.min(offset + length, bytes.byteLength)),
    close: () => {},
  };
}

const FIRST_WINDOW = 64 * 1024;
const LAST_WINDOW = 4 * 1024 * 1024;

/** Bytes the next read overwrites: zero-filling them first cost as much as the read. Only read bytes are ever shown. */
function uninitialized(n: number): Uint8Array {
  const b = Buffer.allocUnsafeSlow(n);
  return new Uint8Array(b.buffer, b.byteOffset, n);
}

export function fileSource(path: string): ByteSource {
  const fd = openSync(path, 'r');
  let closed = false;
  const size = fstatSync(fd).size;
  let window: Uint8Array = new Uint8Array(0);
  let windowStart = 0;
  let next = FIRST_WINDOW;

  function fill(into: Uint8Array, offset: number): Uint8Array {
    let got = 0;
    while (got < into.byteLength) {
      const r = readSync(fd, into, got, into.byteLength - got, offset + got);
      if (r === 0) return into.subarray(0, got);
      got += r;
    }
    return into;
  }

  return {
    name: path,
    size,
    read(offset, length) {
      const n = Math.max(0, Math.min(length, size - offset));
      const from = offset - windowStart;
      if (from >= 0 && from + n <= window.byteLength) return window.subarray(from, from + n);
      // A read bigger than a window (a large blob) gets a buffer of its own, and the window stays.
      if (n > LAST_WINDOW) return fill(uninitialized(n), offset);
      window = fill(uninitialized(Math.max(n, Math.min(next, size - offset))), offset);
      windowStart = offset;
      next = Math.min(next * 2, LAST_WINDOW);
      return window.subarray(0, Math.min(n, window.byteLength));
    },
    close() {
      if (!closed) closeSync(fd);
      closed = true;
    },
  };
}

export function openSource(input: string | Uint8Array, name?: string): ByteSource {
  return typeof input === 'string' ? fileSource(input) : bufferSource(input, name);
}
