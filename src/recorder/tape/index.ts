/**
 * The .jbx flight-recorder tape as a standalone library (no Temporal): the byte format (FORMAT.md), a verifying
 * reader (whole-tape or streaming), an append-only writer with content-addressed blobs, a health check, and
 * message interning for conversations.
 */
export { BlobRef, blobRef } from './blobRef';
export { type ChunkBlobs, type ChunkEntry, chunkEntries, ENTRIES_BLOB_MIN, packChunks } from './chunks';
export { COMPRESS_MAX_BYTES, COMPRESS_MIN_BYTES } from './compressedBlob';
export {
  type CursorOptions,
  openTape,
  type SealInfo,
  type TapeBlob,
  TapeCursor,
  type TapeFrame,
  type TornTail,
} from './cursor';
export {
  TapeCorruptError,
  TapeError,
  TapeLimitError,
  type TapeLocation,
  TapeMagicError,
  TapeSealedError,
  TapeTruncatedError,
  TapeUsageError,
  TapeVersionError,
  TapeWriterUnavailableError,
} from './errors';
export { blake3, chainNext } from './hash';
export {
  FORMAT_VERSION,
  type FormatVersion,
  MAGIC,
  READABLE_VERSIONS,
  type TapeHeader,
  type TapeParent,
} from './header';
export {
  FRAME_KINDS,
  type FrameKind,
  kindCode,
  kindName,
  type PayloadEncoding,
  STEP_CLOSING_KINDS,
} from './kinds';
export { DEFAULT_LIMITS, type TapeLimits } from './limits';
export {
  conversationNode,
  decodeBlob,
  derefValue,
  internMessages,
  resolveMessages,
} from './messages';
export { type ReadOptions, readTape, type Tape } from './reader';
export type { TemporalIdentity } from './schema';
export { type VerifyReport, verifyTape } from './verify';
export {
  type AppendedFrame,
  type AppendFrame,
  type BlobOptions,
  type FsyncPolicy,
  TapeWriter,
  type TapeWriterState,
  type WriterOptions,
} from './writer';
