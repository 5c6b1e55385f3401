/**
 * The reader's payload decoder: one pass that checks a MessagePack payload exactly as `scanPayload` does (the
 * same limits, in the same order, with the same problems) and builds its value as @msgpack/msgpack's decoder
 * would, so reading a frame walks its bytes once instead of twice. Nothing is allocated for a container or a
 * string before its declared size is checked against the bytes that remain and the limits. @msgpack/msgpack
 * stays the reference: the tests decode every payload both ways.
 */
import { isAscii } from 'node:buffer';
import { BlobRef } from './blobRef';
import { HASH_BYTES } from './hash';
import type { TapeLimits } from './limits';
import { BLOB_REF_EXT, PayloadProblem } from './payload';

/** Strings above this many bytes go through TextDecoder when they are not ASCII, as @msgpack/msgpack's do. */
const TEXT_DECODER_THRESHOLD = 200;
const textDecoder = new TextDecoder();

/**
 * UTF-8 as @msgpack/msgpack decodes its short strings: without validation, so the bytes its encoder writes for
 * a lone surrogate (a model's stream can split a pair between two chunks) come back as that surrogate.
 */
function utf8DecodeShort(bytes: Uint8Array, start: number, length: number): string {
  let offset = start;
  const end = start + length;
  const units: number[] = [];
  while (offset < end) {
    const byte1 = bytes[offset++]!;
    if ((byte1 & 0x80) === 0) units.push(byte1);
    else if ((byte1 & 0xe0) === 0xc0) {
      const byte2 = bytes[offset++]! & 0x3f;
      units.push(((byte1 & 0x1f) << 6) | byte2);
    } else if ((byte1 & 0xf0) === 0xe0) {
      const byte2 = bytes[offset++]! & 0x3f;
      const byte3 = bytes[offset++]! & 0x3f;
      units.push(((byte1 & 0x1f) << 12) | (byte2 << 6) | byte3);
    } else if ((byte1 & 0xf8) === 0xf0) {
      const byte2 = bytes[offset++]! & 0x3f;
      const byte3 = bytes[offset++]! & 0x3f;
      const byte4 = bytes[offset++]! & 0x3f;
      let unit = ((byte1 & 0x07) << 0x12) | (byte2 << 0x0c) | (byte3 << 0x06) | byte4;
      if (unit > 0xffff) {
        unit -= 0x10000;
        units.push(((unit >>> 10) & 0x3ff) | 0xd800);
        unit = 0xdc00 | (unit & 0x3ff);
      }
      units.push(unit);
    } else units.push(byte1);
  }
  return String.fromCharCode(...units);
}

/** Marks a failed decode; the problem is in `PayloadDecoder.problem`. */
const FAILED = Symbol('failed');

class PayloadDecoder {
  pos = 0;
  values = 0;
  problem: PayloadProblem | undefined;
  readonly end: number;
  readonly buf: Buffer;

  constructor(
    readonly bytes: Uint8Array,
    readonly limits: TapeLimits,
    readonly refs: string[] | undefined,
  ) {
    this.end = bytes.byteLength;
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  fail(reason: string, detail: string, limit?: keyof TapeLimits): typeof FAILED {
    this.problem = new PayloadProblem(reason, detail, limit);
    return FAILED;
  }

  short(): typeof FAILED {
    return this.fail('payload-decode', `payload ends inside a value at payload byte ${this.pos}`);
  }

  string(length: number, isKey: boolean): string | typeof FAILED {
    if (length > this.limits.maxStringBytes) {
      return this.fail(
        'payload-string',
        `a ${length}-byte string exceeds ${this.limits.maxStringBytes}`,
        'maxStringBytes',
      );
    }
    const start = this.pos;
    if (start + length > this.end) return this.short();
    this.pos += length;
    const text =
      length <= 16
        ? utf8DecodeShort(this.bytes, start, length)
        : isAscii(this.bytes.subarray(start, start + length))
          ? this.buf.toString('latin1', start, start + length)
          : length > TEXT_DECODER_THRESHOLD
            ? textDecoder.decode(this.bytes.subarray(start, start + length))
            : utf8DecodeShort(this.bytes, start, length);
    if (isKey && text === '__proto__') {
      this.pos = start;
      return this.fail('payload-decode', 'map key __proto__ is not allowed');
    }
    return text;
  }

  container(count: number, map: boolean, depth: number): unknown {
    if (count === 0) return map ? {} : [];
    // Every value takes at least one byte, so a count beyond the bytes left is a lie, not a big payload.
    if ((map ? count * 2 : count) > this.end - this.pos) return this.short();
    if (depth + 1 > this.limits.maxDepth)
      return this.fail('payload-depth', `nesting deeper than ${this.limits.maxDepth}`, 'maxDepth');
    if (map) {
      const out: Record<string, unknown> = {};
      for (let i = 0; i < count; i++) {
        const key = this.value(depth + 1, true);
        if (key === FAILED) return FAILED;
        const v = this.value(depth + 1, false);
        if (v === FAILED) return FAILED;
        out[key as string] = v;
      }
      return out;
    }
    const out = new Array<unknown>(count);
    for (let i = 0; i < count; i++) {
      const v = this.value(depth + 1, false);
      if (v === FAILED) return FAILED;
      out[i] = v;
    }
    return out;
  }

  ext(length: number): unknown {
    const at = this.pos;
    if (at + 1 + length > this.end) return this.short();
    const type = this.buf.readInt8(at);
    if (type !== BLOB_REF_EXT || length !== HASH_BYTES) {
      return this.fail(
        'payload-decode',
        `extension type ${type} of ${length} bytes at payload byte ${at} is not a blob reference`,
      );
    }
    const ref = new BlobRef(this.bytes.subarray(at + 1, at + 1 + HASH_BYTES));
    if (this.refs) this.refs.push(ref.hash);
    this.pos += 1 + length;
    return ref;
  }

  /** `depth`: the non-empty containers open around this value. */
  value(depth: number, isKey: boolean): unknown {
    if (++this.values > this.limits.maxValues) {
      return this.fail(
        'payload-values',
        `payload holds more than ${this.limits.maxValues} values`,
        'maxValues',
      );
    }
    if (this.pos >= this.end) return this.short();
    const b = this.bytes[this.pos++]!;
    const buf = this.buf;
    if (b <= 0x7f) return isKey ? this.notAKey() : b;
    if (b >= 0xe0) return isKey ? this.notAKey() : b - 0x100;
    if (b <= 0x8f) return isKey ? this.notAKey() : this.container(b & 0x0f, true, depth);
    if (b <= 0x9f) return isKey ? this.notAKey() : this.container(b & 0x0f, false, depth);
    if (b <= 0xbf) return this.string(b & 0x1f, isKey);
    const at = this.pos;
    let v: unknown;
    switch (b) {
      case 0xd9:
        if (at + 1 > this.end) return this.short();
        this.pos += 1;
        return this.string(buf[at]!, isKey);
      case 0xda:
        if (at + 2 > this.end) return this.short();
        this.pos += 2;
        return this.string(buf.readUInt16BE(at), isKey);
      case 0xdb:
        if (at + 4 > this.end) return this.short();
        this.pos += 4;
        return this.string(buf.readUInt32BE(at), isKey);
    }
    // Every other type: its size fields first (as the scanner reads them), then "a key must be a string".
    let size = -1;
    switch (b) {
      case 0xc0:
      case 0xc2:
      case 0xc3:
        break;
      case 0xc4:
      case 0xc7:
        if (at + (b === 0xc7 ? 2 : 1) > this.end) return this.short();
        size = buf[at]!;
        this.pos += 1;
        break;
      case 0xc5:
      case 0xc8:
        if (at + (b === 0xc8 ? 3 : 2) > this.end) return this.short();
        size = buf.readUInt16BE(at);
        this.pos += 2;
        break;
      case 0xc6:
      case 0xc9:
        if (at + (b === 0xc9 ? 5 : 4) > this.end) return this.short();
        size = buf.readUInt32BE(at);
        this.pos += 4;
        break;
      case 0xdc:
      case 0xde:
        if (at + 2 > this.end) return this.short();
        size = buf.readUInt16BE(at);
        this.pos += 2;
        break;
      case 0xdd:
      case 0xdf:
        if (at + 4 > this.end) return this.short();
        size = buf.readUInt32BE(at);
        this.pos += 4;
        break;
      case 0xca:
      case 0xcb:
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3:
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        break;
      default:
        return this.fail(
          'payload-decode',
          `byte 0x${b.toString(16)} at payload byte ${at - 1} is not a MessagePack type`,
        );
    }
    if (isKey) return this.notAKey();
    const p = this.pos;
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
      case 0xc5:
      case 0xc6:
        if (size > this.limits.maxStringBytes) {
          return this.fail(
            'payload-string',
            `a ${size}-byte string exceeds ${this.limits.maxStringBytes}`,
            'maxStringBytes',
          );
        }
        if (p + size > this.end) return this.short();
        this.pos += size;
        return this.bytes.subarray(p, p + size);
      case 0xc7:
      case 0xc8:
      case 0xc9:
        return this.ext(size);
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return this.ext(1 << (b - 0xd4));
      case 0xdc:
      case 0xdd:
        return this.container(size, false, depth);
      case 0xde:
      case 0xdf:
        return this.container(size, true, depth);
    }
    const width =
      b === 0xca || b === 0xce || b === 0xd2
        ? 4
        : b === 0xcb || b === 0xcf || b === 0xd3
          ? 8
          : b === 0xcc || b === 0xd0
            ? 1
            : 2;
    if (p + width > this.end) return this.short();
    this.pos += width;
    switch (b) {
      case 0xca:
        v = buf.readFloatBE(p);
        break;
      case 0xcb:
        v = buf.readDoubleBE(p);
        break;
      case 0xcc:
        v = buf[p]!;
        break;
      case 0xcd:
        v = buf.readUInt16BE(p);
        break;
      case 0xce:
        v = buf.readUInt32BE(p);
        break;
      case 0xcf:
        // As @msgpack/msgpack without useBigInt64: the nearest double.
        v = buf.readUInt32BE(p) * 0x1_0000_0000 + buf.readUInt32BE(p + 4);
        break;
      case 0xd0:
        v = buf.readInt8(p);
        break;
      case 0xd1:
        v = buf.readInt16BE(p);
        break;
      case 0xd2:
        v = buf.readInt32BE(p);
        break;
      default:
        v = buf.readInt32BE(p) * 0x1_0000_0000 + buf.readUInt32BE(p + 4);
    }
    return v;
  }

  notAKey(): typeof FAILED {
    return this.fail('payload-decode', `map key at payload byte ${this.pos - 1} is not a string`);
  }
}

/**
 * Checks and decodes one payload in a single pass. Returns the value, or a PayloadProblem (a MessagePack
 * payload is never decoded to one). Blob references found are appended to `refs` in order.
 */
export function decodeCheckedPayload(bytes: Uint8Array, limits: TapeLimits, refs?: string[]): unknown {
  if (bytes.byteLength === 0) return new PayloadProblem('payload-decode', 'empty MessagePack payload');
  const d = new PayloadDecoder(bytes, limits, refs);
  const value = d.value(0, false);
  if (value === FAILED) return d.problem;
  if (d.pos !== d.end)
    return new PayloadProblem('payload-decode', `${d.end - d.pos} bytes follow the payload value`);
  return value;
}
