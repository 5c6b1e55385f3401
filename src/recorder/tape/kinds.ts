/**
 * Frame kinds and payload encodings: the one-byte enums of the format. Codes are part of the file format
 * (FORMAT.md, "Frame kinds"): never renumber, only append.
 */

export const FRAME_KINDS = [
  'llm.request',
  'llm.chunk',
  'llm.response',
  'tool.call',
  'tool.result',
  'random',
  'clock',
  'activity.start',
  'activity.complete',
  'activity.error',
  'fs.mutation',
  'sql.mutation',
  'shell.exec',
  'mcp.call',
  'commit',
  'rollback',
  'breaker.trip',
  'fork',
  'blob',
  'history',
  'outcome',
  'seal',
  'approval',
  'segment',
] as const;

export type FrameKind = (typeof FRAME_KINDS)[number];

/** Code 0 is never a kind, so a zero-filled region can never parse as a frame. */
export function kindCode(kind: FrameKind): number {
  return FRAME_KINDS.indexOf(kind) + 1;
}

/** `undefined` for codes this version does not define (25..255): readers surface them, never guess. */
export function kindName(code: number): FrameKind | undefined {
  return code >= 1 ? FRAME_KINDS[code - 1] : undefined;
}

/**
 * Kinds after which the 'step' fsync policy makes the tape durable: each records a finished effect or result, so
 * losing frames after the last of them only loses work a retry redoes anyway.
 */
export const STEP_CLOSING_KINDS: ReadonlySet<FrameKind> = new Set<FrameKind>([
  'llm.response',
  'tool.result',
  'random',
  'clock',
  'activity.complete',
  'activity.error',
  'fs.mutation',
  'sql.mutation',
  'shell.exec',
  'mcp.call',
  'commit',
  'rollback',
  'breaker.trip',
  'fork',
  'history',
  'outcome',
  'seal',
  'approval',
  'segment',
]);

/** Kinds whose payload must name the activity attempt it belongs to. */
export const ACTIVITY_KINDS: ReadonlySet<FrameKind> = new Set<FrameKind>([
  'activity.start',
  'activity.complete',
  'activity.error',
]);

export const ENCODING_RAW = 0;
export const ENCODING_MSGPACK = 1;
/** Version 2, blob frames only: the blob's 32-byte key, then its bytes (raw) as a raw DEFLATE stream. */
export const ENCODING_DEFLATE_RAW = 2;
/** Version 2, blob frames only: as ENCODING_DEFLATE_RAW, the blob being a MessagePack value. */
export const ENCODING_DEFLATE_MSGPACK = 3;
/** What a payload (or a compressed blob, once inflated) is. Compression is a separate flag (`compressed`). */
export type PayloadEncoding = 'raw' | 'msgpack';

export function encodingCode(e: PayloadEncoding, compressed = false): number {
  if (compressed) return e === 'raw' ? ENCODING_DEFLATE_RAW : ENCODING_DEFLATE_MSGPACK;
  return e === 'raw' ? ENCODING_RAW : ENCODING_MSGPACK;
}

export function encodingName(code: number): PayloadEncoding | undefined {
  switch (code) {
    case ENCODING_RAW:
    case ENCODING_DEFLATE_RAW:
      return 'raw';
    case ENCODING_MSGPACK:
    case ENCODING_DEFLATE_MSGPACK:
      return 'msgpack';
    default:
      return undefined;
  }
}

export function isCompressedEncoding(code: number): boolean {
  return code === ENCODING_DEFLATE_RAW || code === ENCODING_DEFLATE_MSGPACK;
}
