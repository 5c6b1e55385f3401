/**
 * The streamed chunks of an `llm.chunk` frame (FORMAT.md, kinds table, note 2). A batch's text deltas are stored
 * once, concatenated, as one raw blob (`text`), and each entry keeps the UTF-8 byte length of its delta instead
 * of the delta itself: the deltas of a stream are its reply's text, and as one blob they compress with it (a
 * chunk entry per 16 characters of text was a quarter of a tape's bytes). Frames written before this layout hold
 * each delta in its entry; `chunkEntries` reads both.
 */
import { BlobRef } from './blobRef';
import type { TapeBlob } from './cursor';

/** One chunk as recorded: `[seq, offsetMs, delta, raw?]`, `delta` null for a chunk without text. */
export type ChunkEntry = unknown[];

type Blobs = ReadonlyMap<string, TapeBlob>;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/**
 * The payload fields for a batch of chunk entries: `chunks` with byte lengths in place of deltas, and `text`,
 * the blob of their concatenated deltas, stored with `putBlob` (absent when no chunk has text).
 */
export async function packChunks(
  entries: readonly ChunkEntry[],
  putBlob: (bytes: Uint8Array) => Promise<BlobRef>,
): Promise<{ chunks: ChunkEntry[]; text?: BlobRef }> {
  // Each delta encoded on its own, so its length is exactly its bytes in the blob even where a stream split a
  // character's surrogate pair across two chunks (which encoding the joined text would re-pair).
  const parts: Uint8Array[] = [];
  let size = 0;
  const chunks = entries.map((e) => {
    const delta = e[2];
    if (typeof delta !== 'string') return e;
    const bytes = utf8.encode(delta);
    parts.push(bytes);
    size += bytes.byteLength;
    const packed = e.slice();
    packed[2] = bytes.byteLength;
    return packed;
  });
  if (size === 0) return { chunks: entries.slice() };
  return { chunks, text: await putBlob(Buffer.concat(parts, size)) };
}

/**
 * The entries of an `llm.chunk` payload with their deltas as strings, whichever layout it was written in. A
 * length past the end of its text blob (or a missing blob) gives the text that is there: a reader shows what
 * the tape holds rather than failing on one frame.
 */
export function chunkEntries(payload: unknown, blobs: Blobs): ChunkEntry[] {
  const p = payload as { chunks?: unknown; text?: unknown } | undefined;
  const chunks = Array.isArray(p?.chunks) ? (p.chunks as unknown[]).filter(Array.isArray) : [];
  if (!(p?.text instanceof BlobRef)) return chunks as ChunkEntry[];
  const bytes = blobs.get(p.text.hash)?.bytes ?? new Uint8Array(0);
  let at = 0;
  return (chunks as ChunkEntry[]).map((c) => {
    const n = c[2];
    if (typeof n !== 'number') return c;
    const e = c.slice();
    e[2] = utf8Decoder.decode(bytes.subarray(at, at + n));
    at += n;
    return e;
  });
}
