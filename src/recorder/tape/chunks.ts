/**
 * The streamed chunks of an `llm.chunk` frame (FORMAT.md, kinds table, note 2). A batch's text deltas are stored
 * once, concatenated, as one raw blob (`text`), and each entry keeps the UTF-8 byte length of its delta instead
 * of the delta itself: the deltas of a stream are its reply's text, and as one blob they compress with it (a
 * chunk entry per 16 characters of text was a quarter of a tape's bytes). In a version-3 tape a batch of 8 or
 * more entries is itself one MessagePack blob (`chunks` its reference), so the blob layer compresses it: the
 * entries of a stream repeat their shape, and the raw provider events of chunks without text (tool-call pieces,
 * usage) repeat most of their fields, which inline were most of an llm.chunk frame. Frames written before these
 * layouts hold each delta in its entry, or the entries inline; `chunkEntries` reads all three.
 */
import { BlobRef } from './blobRef';
import type { TapeBlob } from './cursor';
import { derefValue } from './messages';

/** One chunk as recorded: `[seq, offsetMs, delta, raw?]`, `delta` null for a chunk without text. */
export type ChunkEntry = unknown[];

type Blobs = ReadonlyMap<string, TapeBlob>;

/** Where a batch's blobs go. */
export interface ChunkBlobs {
  /** Stores raw bytes (the batch's text). */
  blob(bytes: Uint8Array): Promise<BlobRef>;
  /**
   * Stores a MessagePack value (the batch's entries). Absent for a tape of format 1 or 2, whose readers take the
   * entries inline only.
   */
  value?(value: unknown): Promise<BlobRef>;
}

/** Batches of fewer entries stay inline: a blob frame and its reference cost more than they would save. */
export const ENTRIES_BLOB_MIN = 8;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/**
 * The payload fields for a batch of chunk entries: `chunks`, the entries with byte lengths in place of deltas
 * (or, stored with `blobs.value`, the reference of a blob holding them), and `text`, the blob of their
 * concatenated deltas (absent when no chunk has text).
 */
export async function packChunks(
  entries: readonly ChunkEntry[],
  blobs: ChunkBlobs,
): Promise<{ chunks: ChunkEntry[] | BlobRef; text?: BlobRef }> {
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
  const text = size === 0 ? undefined : await blobs.blob(Buffer.concat(parts, size));
  const packed = blobs.value && chunks.length >= ENTRIES_BLOB_MIN ? await blobs.value(chunks) : chunks;
  return text === undefined ? { chunks: packed } : { chunks: packed, text };
}

/**
 * The entries of an `llm.chunk` payload with their deltas as strings, whichever layout it was written in. A
 * length past the end of its text blob (or a missing blob) gives the text that is there: a reader shows what
 * the tape holds rather than failing on one frame.
 */
export function chunkEntries(payload: unknown, blobs: Blobs): ChunkEntry[] {
  const p = payload as { chunks?: unknown; text?: unknown } | undefined;
  const listed = p?.chunks instanceof BlobRef ? derefValue(blobs, p.chunks) : p?.chunks;
  const chunks = Array.isArray(listed) ? (listed as unknown[]).filter(Array.isArray) : [];
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
