/**
 * The `.jbxb` container, byte by byte as src/timetravel/bundle/BUNDLE.md specifies: a preamble, a table of named parts each
 * with its BLAKE3, and a trailer holding the BLAKE3 of every byte before it. This module only frames and
 * checks bytes; what the parts mean (manifest, tape, history, workflow code) is openBundle's concern.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { blake3 } from '../../recorder/tape';
import { toHex } from '../../recorder/tape/hash';
import { BundleCorruptError, BundleMagicError, BundleTruncatedError, BundleVersionError } from './errors';

export const BUNDLE_MAGIC = new Uint8Array([0x4a, 0x42, 0x58, 0x42, 0x4e, 0x44, 0x4c, 0x00]); // "JBXBNDL\0"
export const BUNDLE_END_MAGIC = new Uint8Array([0x4a, 0x42, 0x58, 0x42, 0x45, 0x4e, 0x44, 0x00]); // "JBXBEND\0"
export const BUNDLE_VERSION = 1;
export const PREAMBLE_BYTES = 16;
export const PART_HEAD_BYTES = 44;
export const TRAILER_BYTES = 40;
// Manifest, tape, code, content and one history per execution of a run that continued as new.
export const MAX_PARTS = 1024;
export const MAX_NAME_BYTES = 255;

export const PART_KINDS = { manifest: 1, tape: 2, history: 3, workflowCode: 4, content: 5 } as const;
export type PartKind = keyof typeof PART_KINDS;

export interface BundlePart {
  kind: PartKind;
  name: string;
  data: Uint8Array;
}

export interface DecodedPart extends BundlePart {
  /** BLAKE3-256 of the data, hex. */
  hash: string;
  offset: number;
}

const kindOf = (code: number): PartKind | undefined =>
  (Object.keys(PART_KINDS) as PartKind[]).find((k) => PART_KINDS[k] === code);

function startsWith(bytes: Uint8Array, prefix: Uint8Array, at = 0): boolean {
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false;
  return true;
}

/** Whether bytes begin like a bundle (the magic), to tell a bundle from a tape by content, not by name. */
export function looksLikeBundle(head: Uint8Array): boolean {
  return head.length >= BUNDLE_MAGIC.length && startsWith(head, BUNDLE_MAGIC);
}

export function encodeBundle(parts: readonly BundlePart[]): Uint8Array {
  if (parts.length < 1 || parts.length > MAX_PARTS)
    throw new RangeError(`a bundle holds 1..${MAX_PARTS} parts`);
  const names = parts.map((p) => new TextEncoder().encode(p.name));
  const size =
    PREAMBLE_BYTES +
    parts.reduce((n, p, i) => n + PART_HEAD_BYTES + names[i]!.length + p.data.length, 0) +
    TRAILER_BYTES;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(BUNDLE_MAGIC, 0);
  view.setUint16(8, BUNDLE_VERSION, true);
  view.setUint16(10, 0, true);
  view.setUint32(12, parts.length, true);
  let o = PREAMBLE_BYTES;
  parts.forEach((p, i) => {
    const name = names[i]!;
    if (name.length < 1 || name.length > MAX_NAME_BYTES) throw new RangeError(`part name ${p.name} too long`);
    out[o] = PART_KINDS[p.kind];
    out[o + 1] = 0;
    view.setUint16(o + 2, name.length, true);
    view.setBigUint64(o + 4, BigInt(p.data.length), true);
    out.set(blake3(p.data), o + 12);
    out.set(name, o + PART_HEAD_BYTES);
    out.set(p.data, o + PART_HEAD_BYTES + name.length);
    o += PART_HEAD_BYTES + name.length + p.data.length;
  });
  out.set(BUNDLE_END_MAGIC, o);
  out.set(blake3(out.subarray(0, o)), o + 8);
  return out;
}

/** Checks every byte of a bundle: magic, version, part table, each part's hash, and the whole-file hash. */
export function decodeBundle(bytes: Uint8Array, file: string): DecodedPart[] {
  if (bytes.length < BUNDLE_MAGIC.length) {
    if (startsWith(BUNDLE_MAGIC, bytes)) throw new BundleTruncatedError(file, 'the preamble', bytes.length);
    throw new BundleMagicError(file);
  }
  if (!startsWith(bytes, BUNDLE_MAGIC)) throw new BundleMagicError(file);
  if (bytes.length < PREAMBLE_BYTES) throw new BundleTruncatedError(file, 'the preamble', bytes.length);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint16(8, true);
  if (version !== BUNDLE_VERSION) throw new BundleVersionError(file, version);
  if (view.getUint16(10, true) !== 0)
    throw new BundleCorruptError(file, 'reserved', "the preamble's reserved field is not 0");
  const count = view.getUint32(12, true);
  if (count < 1 || count > MAX_PARTS)
    throw new BundleCorruptError(file, 'part-count', `part count ${count} is outside 1..${MAX_PARTS}`);
  const end = bytes.length - TRAILER_BYTES;
  const parts: DecodedPart[] = [];
  let o = PREAMBLE_BYTES;
  for (let i = 0; i < count; i++) {
    if (o + PART_HEAD_BYTES > end)
      throw new BundleTruncatedError(file, `the head of part ${i}`, bytes.length);
    const code = bytes[o]!;
    const nameLength = view.getUint16(o + 2, true);
    const length = view.getBigUint64(o + 4, true);
    if (bytes[o + 1] !== 0)
      throw new BundleCorruptError(file, 'reserved', `part ${i}'s reserved byte is not 0`);
    const kind = kindOf(code);
    if (!kind) throw new BundleCorruptError(file, 'kind', `part ${i} has unknown kind ${code}`);
    if (nameLength < 1 || nameLength > MAX_NAME_BYTES)
      throw new BundleCorruptError(
        file,
        'name',
        `part ${i}'s name length ${nameLength} is outside 1..${MAX_NAME_BYTES}`,
      );
    const dataStart = o + PART_HEAD_BYTES + nameLength;
    if (length > BigInt(Math.max(0, end - dataStart)))
      throw new BundleTruncatedError(file, `part ${i} (${length} bytes declared)`, bytes.length);
    const dataEnd = dataStart + Number(length);
    const data = bytes.subarray(dataStart, dataEnd);
    const hash = toHex(blake3(data));
    if (hash !== toHex(bytes.subarray(o + 12, o + 44)))
      throw new BundleCorruptError(file, 'part-hash', `part ${i} fails its BLAKE3 check (computed ${hash})`);
    let name: string;
    try {
      name = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(o + PART_HEAD_BYTES, dataStart));
    } catch (err) {
      throw new BundleCorruptError(file, 'name', `part ${i}'s name is not UTF-8`, err);
    }
    parts.push({ kind, name, data, hash, offset: dataStart });
    o = dataEnd;
  }
  if (end < o || bytes.length - o < TRAILER_BYTES)
    throw new BundleTruncatedError(file, 'the trailer', bytes.length);
  if (o !== end)
    throw new BundleCorruptError(
      file,
      'trailing-bytes',
      `${end - o} unexpected bytes between the last part and the trailer`,
    );
  if (!startsWith(bytes, BUNDLE_END_MAGIC, end))
    throw new BundleCorruptError(file, 'trailer', 'the trailer magic JBXBEND is missing');
  const whole = toHex(blake3(bytes.subarray(0, end)));
  if (whole !== toHex(bytes.subarray(end + 8, end + 40)))
    throw new BundleCorruptError(
      file,
      'file-hash',
      `the whole-file BLAKE3 does not match (computed ${whole})`,
    );
  return parts;
}

/** Whether a file starts with the bundle magic (read from its first bytes only). */
export function isBundleFile(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const head = new Uint8Array(BUNDLE_MAGIC.length);
    const n = readSync(fd, head, 0, head.length, 0);
    return n === head.length && looksLikeBundle(head);
  } finally {
    closeSync(fd);
  }
}
