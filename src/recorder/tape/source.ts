/**
 * Random access to tape bytes, from memory or from a file. File reads allocate exactly what is asked for, and
 * callers only ask after a limit check, so a hostile file never makes the reader allocate more than a limit.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export interface ByteSource {
  /** Path, or `<bytes>`; used in error messages. */
  readonly name: string;
  readonly size: number;
  /** Up to `length` bytes from `offset`; fewer only at end of file. */
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

export function fileSource(path: string): ByteSource {
  const fd = openSync(path, 'r');
  let closed = false;
  const size = fstatSync(fd).size;
  return {
    name: path,
    size,
    read(offset, length) {
      const n = Math.max(0, Math.min(length, size - offset));
      const out = new Uint8Array(n);
      let got = 0;
      while (got < n) {
        const r = readSync(fd, out, got, n - got, offset + got);
        if (r === 0) return out.subarray(0, got);
        got += r;
      }
      return out;
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
