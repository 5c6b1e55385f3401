/**
 * The step log (`files/steps.log`): the run's tool-step checkpoints, appended one record per step. A record is
 * the step's whole files checkpoint (its attempt, result and layer, plus the bytes of the blobs its layer wrote),
 * so a step is made durable by appending to a file that already exists and one fdatasync: no temp file, no
 * rename, no directory fsync, and no rewrite of the whole manifest every step. The run's change set is the
 * manifest plus the log's records in order, skipping records of steps the manifest already names; compaction
 * folds the log into the manifest. Byte layout: docs/shadow-booth.md, "The step log".
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { isCode } from './durable';
import { StepLogCorruptError, StepLogFormatError, StepLogTruncatedError } from './errors';
import { type Layer, validateEntries } from './manifest';

export const STEP_LOG_FILE = 'steps.log';
/** ASCII `JBXSTEPL`. */
export const STEP_LOG_MAGIC = Buffer.from('JBXSTEPL', 'ascii');
export const STEP_LOG_VERSION = 1;
export const STEP_LOG_HEADER_BYTES = 16;
/** Body length (u32) and the body's CRC-32 (u32). */
export const RECORD_HEAD_BYTES = 8;
/** Decode limit: a record body claiming more is corrupt, whatever follows it. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;
/**
 * Blob bytes a record carries at most; a step that wrote more makes its blobs durable in `blobs/` (a directory
 * fsync) before its record instead, and the record names them without their bytes.
 */
export const MAX_INLINE_BYTES = 1024 * 1024;

export interface StepLogRecord {
  step: string;
  attempt: number;
  result: unknown;
  layer: Layer;
  /** Contents of blobs the step wrote, by sha256: the durable copy until compaction fsyncs `blobs/`. */
  blobs: Map<string, Buffer>;
}

export interface StepLogContents {
  /** Random per log file: a compaction replaces the file with one of a new generation. */
  generation: number;
  /** Offset after the last valid record: a torn tail (a record cut short by a crash) starts here. */
  end: number;
  records: StepLogRecord[];
}

export function stepLogHeader(generation = randomBytes(4).readUInt32LE(0)): Buffer {
  const h = Buffer.alloc(STEP_LOG_HEADER_BYTES);
  STEP_LOG_MAGIC.copy(h, 0);
  h.writeUInt16LE(STEP_LOG_VERSION, 8);
  h.writeUInt16LE(0, 10);
  h.writeUInt32LE(generation, 12);
  return h;
}

/** The generation in a log's first 16 bytes; throws on a header that is short, foreign or of another version. */
export function headerGeneration(file: string, bytes: Buffer): number {
  if (bytes.length < STEP_LOG_HEADER_BYTES)
    throw new StepLogTruncatedError(file, bytes.length, STEP_LOG_HEADER_BYTES);
  if (!bytes.subarray(0, 8).equals(STEP_LOG_MAGIC))
    throw new StepLogFormatError(file, 'its first 8 bytes are not the magic JBXSTEPL');
  const version = bytes.readUInt16LE(8);
  if (version !== STEP_LOG_VERSION)
    throw new StepLogFormatError(
      file,
      `it is version ${version}; this Jukebox reads version ${STEP_LOG_VERSION}`,
    );
  if (bytes.readUInt16LE(10) !== 0)
    throw new StepLogFormatError(file, 'its reserved header bytes are not zero');
  return bytes.readUInt32LE(12);
}

/** A record's bytes: head (body length, CRC-32 of the body), then the body (JSON length, JSON, blob bytes). */
export function encodeRecord(r: StepLogRecord): Buffer {
  const blobs = [...r.blobs];
  const json = Buffer.from(
    JSON.stringify({
      step: r.step,
      attempt: r.attempt,
      result: r.result,
      layer: r.layer,
      blobs: blobs.map(([hash, bytes]) => [hash, bytes.length]),
    }),
  );
  const blobBytes = blobs.reduce((n, [, b]) => n + b.length, 0);
  const body = 4 + json.length + blobBytes;
  const out = Buffer.allocUnsafe(RECORD_HEAD_BYTES + body);
  out.writeUInt32LE(body, 0);
  out.writeUInt32LE(json.length, RECORD_HEAD_BYTES);
  json.copy(out, RECORD_HEAD_BYTES + 4);
  let at = RECORD_HEAD_BYTES + 4 + json.length;
  for (const [, b] of blobs) at += b.copy(out, at);
  out.writeUInt32LE(crc32(out.subarray(RECORD_HEAD_BYTES)), 4);
  return out;
}

/** Reads the whole log; null when there is none. */
export function readStepLog(file: string): StepLogContents | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    if (isCode(err, 'ENOENT')) return null;
    throw new StepLogCorruptError(file, 0, 'it cannot be read', err);
  }
  const generation = headerGeneration(file, bytes);
  const { records, end } = decodeRecords(file, bytes, STEP_LOG_HEADER_BYTES);
  return { generation, end, records };
}

/**
 * Decodes records from `bytes` (the file from offset `start` on). A record cut short, or a last record whose
 * checksum fails (or that only zeros follow), is a torn tail: the end of the log. A record that fails its
 * checksum or does not decode with more records after it is corruption, an error naming its offset.
 */
export function decodeRecords(
  file: string,
  bytes: Buffer,
  start: number,
  base = 0,
): { records: StepLogRecord[]; end: number } {
  const records: StepLogRecord[] = [];
  let at = start;
  for (;;) {
    const left = bytes.length - at;
    if (left === 0) break;
    if (left < RECORD_HEAD_BYTES) break;
    const len = bytes.readUInt32LE(at);
    const sum = bytes.readUInt32LE(at + 4);
    if (len < 4 || len > MAX_RECORD_BYTES) {
      if (zerosFrom(bytes, at)) break;
      throw new StepLogCorruptError(
        file,
        base + at,
        len < 4
          ? 'a record is too short to hold its JSON length'
          : `a record claims ${len} bytes, over the limit ${MAX_RECORD_BYTES}`,
      );
    }
    if (RECORD_HEAD_BYTES + len > left) break;
    const body = bytes.subarray(at + RECORD_HEAD_BYTES, at + RECORD_HEAD_BYTES + len);
    const next = at + RECORD_HEAD_BYTES + len;
    if (crc32(body) !== sum) {
      if (next === bytes.length || zerosFrom(bytes, next)) break;
      throw new StepLogCorruptError(file, base + at, 'a record fails its CRC-32 and more records follow it');
    }
    records.push(decodeBody(file, base + at, body));
    at = next;
  }
  return { records, end: base + at };
}

function zerosFrom(bytes: Buffer, at: number): boolean {
  for (let i = at; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

function decodeBody(file: string, offset: number, body: Buffer): StepLogRecord {
  const bad = (detail: string, cause?: unknown) => new StepLogCorruptError(file, offset, detail, cause);
  const jsonLen = body.readUInt32LE(0);
  if (jsonLen > body.length - 4) throw bad('its JSON length runs past the record');
  let v: {
    step?: unknown;
    attempt?: unknown;
    result?: unknown;
    layer?: Layer;
    blobs?: unknown;
  };
  try {
    v = JSON.parse(body.toString('utf8', 4, 4 + jsonLen));
  } catch (err) {
    throw bad('its JSON does not parse', err);
  }
  if (
    typeof v.step !== 'string' ||
    typeof v.attempt !== 'number' ||
    typeof v.layer !== 'object' ||
    v.layer === null
  )
    throw bad('it lacks step, attempt or layer');
  if (typeof v.layer.set !== 'object' || v.layer.set === null || !Array.isArray(v.layer.removed))
    throw bad('its layer has no set or removed');
  try {
    validateEntries(file, v.layer.set);
  } catch (err) {
    throw bad('its layer names an entry the staging area refuses', err);
  }
  if (!Array.isArray(v.blobs)) throw bad('it has no blob list');
  const blobs = new Map<string, Buffer>();
  let at = 4 + jsonLen;
  for (const item of v.blobs as unknown[]) {
    const [hash, size] = Array.isArray(item) ? item : [];
    if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash) || !Number.isInteger(size) || size < 0)
      throw bad('a blob of its list is not [sha256, size]');
    if (at + size > body.length) throw bad('its blobs run past the record');
    blobs.set(hash, body.subarray(at, at + size));
    at += size;
  }
  if (at !== body.length) throw bad('bytes follow its last blob');
  return { step: v.step, attempt: v.attempt, result: v.result, layer: v.layer, blobs };
}
