/**
 * The file header: a 16-byte preamble (magic, version, length), a MessagePack header payload and its BLAKE3
 * checksum. The checksum doubles as the chain seed, which binds every frame to this exact header.
 */
import {
  TapeCorruptError,
  TapeLimitError,
  TapeMagicError,
  TapeTruncatedError,
  TapeVersionError,
} from './errors';
import { blake3, bytesEqual, fromHex, HASH_BYTES, toHex } from './hash';
import type { TapeLimits } from './limits';
import { decodePayload, encodePayload, scanPayload } from './payload';

export const MAGIC = new Uint8Array([0x4a, 0x42, 0x58, 0x54, 0x41, 0x50, 0x45, 0x00]); // "JBXTAPE\0"
/** The version new tapes are written in. */
export const FORMAT_VERSION = 3;
/** Versions this reader reads; a writer continuing a tape keeps the version the tape has (FORMAT.md). */
export const READABLE_VERSIONS: readonly number[] = [1, 2, 3];
export type FormatVersion = 1 | 2 | 3;
export const PREAMBLE_BYTES = 16;

export interface TapeParent {
  /** The parent tape's id. */
  tapeId: string;
  /** Chain value of the parent's last frame inherited by this fork (64 hex chars): pins the exact prefix. */
  tapeHash: string;
  /** The parent step this tape forked at. */
  forkStep: number;
}

export interface TapeHeader {
  tapeId: string;
  /** Creation time, milliseconds since the Unix epoch. */
  createdAtMs: number;
  workflowType: string;
  workflowId: string;
  runId: string;
  taskQueue: string;
  /** Hash of the agent code that produced the tape, in whatever notation the runtime uses (e.g. `blake3:<hex>`). */
  agentCodeHash: string;
  parent?: TapeParent;
  /** Application-defined fields; readers of this version ignore nothing inside it but interpret nothing either. */
  meta?: Record<string, unknown>;
}

const STRING_FIELDS = [
  'tapeId',
  'workflowType',
  'workflowId',
  'runId',
  'taskQueue',
  'agentCodeHash',
] as const;

function isU32(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/**
 * Returns what is wrong with a header, or undefined. Shared by writer (usage error, `tapeHash` as hex) and
 * reader (corruption, `tapeHash` as the 32 bytes on the wire).
 */
export function headerProblem(h: unknown, onWire = false): string | undefined {
  if (!isRecord(h)) return 'header is not a map';
  for (const f of STRING_FIELDS) if (typeof h[f] !== 'string') return `header field ${f} must be a string`;
  if ((h.tapeId as string).length === 0) return 'header field tapeId must not be empty';
  if (typeof h.createdAtMs !== 'number' || !Number.isSafeInteger(h.createdAtMs) || h.createdAtMs < 0) {
    return 'header field createdAtMs must be a non-negative integer';
  }
  if (h.parent !== undefined) {
    const p = h.parent;
    if (!isRecord(p)) return 'header field parent must be a map';
    if (typeof p.tapeId !== 'string') return 'header field parent.tapeId must be a string';
    if (!isU32(p.forkStep)) return 'header field parent.forkStep must be a u32';
    const th = p.tapeHash;
    const ok = onWire
      ? th instanceof Uint8Array && th.byteLength === HASH_BYTES
      : typeof th === 'string' && /^[0-9a-f]{64}$/.test(th);
    if (!ok) {
      return 'header field parent.tapeHash must be 32 bytes';
    }
  }
  if (h.meta !== undefined && !isRecord(h.meta)) return 'header field meta must be a map';
  return undefined;
}

export interface EncodedHeader {
  bytes: Uint8Array;
  /** BLAKE3 of preamble + header payload; the chain seed. */
  checksum: Uint8Array;
}

export function encodeHeader(header: TapeHeader, version: FormatVersion = FORMAT_VERSION): EncodedHeader {
  const wire: Record<string, unknown> = {
    tapeId: header.tapeId,
    createdAtMs: header.createdAtMs,
    workflowType: header.workflowType,
    workflowId: header.workflowId,
    runId: header.runId,
    taskQueue: header.taskQueue,
    agentCodeHash: header.agentCodeHash,
  };
  if (header.parent) {
    wire.parent = {
      tapeId: header.parent.tapeId,
      tapeHash: fromHex(header.parent.tapeHash),
      forkStep: header.parent.forkStep,
    };
  }
  if (header.meta) wire.meta = header.meta;
  const payload = encodePayload(wire);
  const bytes = new Uint8Array(PREAMBLE_BYTES + payload.byteLength + HASH_BYTES);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC, 0);
  view.setUint16(8, version, true);
  view.setUint16(10, 0, true);
  view.setUint32(12, payload.byteLength, true);
  bytes.set(payload, PREAMBLE_BYTES);
  const checksum = blake3(bytes.subarray(0, PREAMBLE_BYTES + payload.byteLength));
  bytes.set(checksum, PREAMBLE_BYTES + payload.byteLength);
  return { bytes, checksum };
}

export interface ParsedHeader {
  header: TapeHeader;
  version: FormatVersion;
  checksum: Uint8Array;
  /** Offset of the first frame. */
  end: number;
}

/** `read(offset, length)` returns at most `length` bytes; fewer means end of file. */
export type ReadAt = (offset: number, length: number) => Uint8Array;

export function parseHeader(read: ReadAt, file: string, limits: TapeLimits): ParsedHeader {
  const loc = (offset: number) => ({ file, frameIndex: null, offset, recoverableFrames: 0 });
  const pre = read(0, PREAMBLE_BYTES);
  const magicSeen = pre.subarray(0, Math.min(8, pre.byteLength));
  if (!bytesEqual(magicSeen, MAGIC.subarray(0, magicSeen.byteLength))) {
    throw new TapeMagicError(
      `does not start with the magic "JBXTAPE\\0" (found ${toHex(magicSeen)}); not a Jukebox tape`,
      loc(0),
    );
  }
  if (pre.byteLength < PREAMBLE_BYTES) {
    if (pre.byteLength >= 10) {
      const version = new DataView(pre.buffer, pre.byteOffset).getUint16(8, true);
      if (!READABLE_VERSIONS.includes(version))
        throw new TapeVersionError(version, READABLE_VERSIONS, loc(8));
    }
    throw new TapeTruncatedError(
      `file is ${pre.byteLength} bytes, shorter than the ${PREAMBLE_BYTES}-byte preamble`,
      loc(0),
    );
  }
  const view = new DataView(pre.buffer, pre.byteOffset, pre.byteLength);
  const version = view.getUint16(8, true);
  if (!READABLE_VERSIONS.includes(version)) throw new TapeVersionError(version, READABLE_VERSIONS, loc(8));
  const reserved = view.getUint16(10, true);
  if (reserved !== 0)
    throw new TapeCorruptError(
      'header-reserved',
      `reserved preamble field is ${reserved}, must be 0`,
      loc(10),
    );
  const length = view.getUint32(12, true);
  if (length > limits.maxHeaderBytes) {
    throw new TapeLimitError(
      'maxHeaderBytes',
      `header payload of ${length} bytes exceeds maxHeaderBytes ${limits.maxHeaderBytes}`,
      loc(12),
    );
  }
  const rest = read(PREAMBLE_BYTES, length + HASH_BYTES);
  if (rest.byteLength < length + HASH_BYTES) {
    throw new TapeTruncatedError(
      `file ends at byte ${PREAMBLE_BYTES + rest.byteLength}, inside the ${length}-byte header and its checksum`,
      loc(PREAMBLE_BYTES),
    );
  }
  const payload = rest.subarray(0, length);
  const stored = rest.subarray(length);
  const hasher = new Uint8Array(PREAMBLE_BYTES + length);
  hasher.set(pre, 0);
  hasher.set(payload, PREAMBLE_BYTES);
  const checksum = blake3(hasher);
  if (!bytesEqual(checksum, stored)) {
    throw new TapeCorruptError(
      'header-checksum',
      `header checksum mismatch (stored ${toHex(stored)}, computed ${toHex(checksum)})`,
      loc(PREAMBLE_BYTES + length),
    );
  }
  const problem = scanPayload(payload, limits);
  if (problem) {
    if (problem.limit)
      throw new TapeLimitError(problem.limit, `header payload: ${problem.detail}`, loc(PREAMBLE_BYTES));
    throw new TapeCorruptError('header-decode', `header payload: ${problem.detail}`, loc(PREAMBLE_BYTES));
  }
  const value = decodePayload(payload);
  const bad = headerProblem(value, true);
  if (bad) throw new TapeCorruptError('header-schema', bad, loc(PREAMBLE_BYTES));
  return {
    header: fromWire(value as Record<string, unknown>),
    version: version as FormatVersion,
    checksum,
    end: PREAMBLE_BYTES + length + HASH_BYTES,
  };
}

function fromWire(w: Record<string, unknown>): TapeHeader {
  const h: TapeHeader = {
    tapeId: w.tapeId as string,
    createdAtMs: w.createdAtMs as number,
    workflowType: w.workflowType as string,
    workflowId: w.workflowId as string,
    runId: w.runId as string,
    taskQueue: w.taskQueue as string,
    agentCodeHash: w.agentCodeHash as string,
  };
  const p = w.parent as Record<string, unknown> | undefined;
  if (p) {
    h.parent = {
      tapeId: p.tapeId as string,
      tapeHash: toHex(p.tapeHash as Uint8Array),
      forkStep: p.forkStep as number,
    };
  }
  if (w.meta !== undefined) h.meta = w.meta as Record<string, unknown>;
  return h;
}
