/**
 * Payload codec: canonical MessagePack (sorted keys, no undefined) with one extension, BlobRef. Bytes are
 * scanned structurally before decoding, because the MessagePack decoder trusts declared lengths and would
 * preallocate or recurse on hostile input; the scan allocates nothing and enforces TapeLimits.
 */
import { Decoder, Encoder, ExtensionCodec } from '@msgpack/msgpack';
import { BlobRef } from './blobRef';
import { HASH_BYTES, toHex } from './hash';
import type { TapeLimits } from './limits';

export const BLOB_REF_EXT = 1;

/** Why a payload was refused; the caller adds the file/frame location. */
export class PayloadProblem {
  constructor(
    readonly reason: string,
    readonly detail: string,
    /** Set when the problem is a limit, not malformed bytes. */
    readonly limit?: keyof TapeLimits,
  ) {}
}

const codec = new ExtensionCodec();
codec.register({
  type: BLOB_REF_EXT,
  encode: (value: unknown) => (value instanceof BlobRef ? value.bytes : null),
  decode: (data: Uint8Array) => new BlobRef(data),
});

const encoder = new Encoder({ extensionCodec: codec, sortKeys: true, ignoreUndefined: true });

/** Thrown by encodePayload; the writer turns it into a TapeUsageError. */
export function encodePayload(value: unknown): Uint8Array {
  return encoder.encode(value);
}

/**
 * encodePayload without its copy: the bytes are a view of the encoder's own buffer, valid only until the next
 * encode. For the writer, which copies them into the frame before it encodes anything else; the copy this
 * saves was a third of encoding a small frame.
 */
export function encodePayloadShared(value: unknown): Uint8Array {
  return encoder.encodeSharedRef(value);
}

/**
 * Walks one MessagePack value without materialising it. Returns a PayloadProblem instead of throwing so the
 * hot path never builds stack traces for hostile input.
 */
export function scanPayload(
  bytes: Uint8Array,
  limits: TapeLimits,
  refs?: string[],
): PayloadProblem | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.byteLength;
  // remaining[i]: values still to read in open container i; keyed[i]: container i is a map.
  const remaining: number[] = [];
  const keyed: boolean[] = [];
  let pos = 0;
  let values = 0;
  // No closures here: the project runs under tsx, whose transform wraps every closure a call creates in a
  // naming call (Object.defineProperty), which cost more than the scan itself in reading profiles.

  if (end === 0) return new PayloadProblem('payload-decode', 'empty MessagePack payload');
  do {
    if (++values > limits.maxValues) {
      return new PayloadProblem(
        'payload-values',
        `payload holds more than ${limits.maxValues} values`,
        'maxValues',
      );
    }
    const top = remaining.length - 1;
    const isKey = top >= 0 && keyed[top] === true && (remaining[top] ?? 0) % 2 === 0;
    if (top >= 0) remaining[top] = (remaining[top] ?? 0) - 1;
    if (pos >= end) return shortPayload(pos);
    const b = bytes[pos++] ?? 0;
    let strLen = -1;
    let binLen = -1;
    let children = -1;
    let map = false;
    let extLen = -1;
    let fixed = 0;
    if (b <= 0x7f || b >= 0xe0) fixed = 0;
    else if (b <= 0x8f) {
      children = b & 0x0f;
      map = true;
    } else if (b <= 0x9f) children = b & 0x0f;
    else if (b <= 0xbf) strLen = b & 0x1f;
    else {
      switch (b) {
        case 0xc0:
        case 0xc2:
        case 0xc3:
          break;
        case 0xc4:
        case 0xd9:
          if (pos + 1 > end) return shortPayload(pos);
          if (b === 0xc4) binLen = view.getUint8(pos);
          else strLen = view.getUint8(pos);
          pos += 1;
          break;
        case 0xc5:
        case 0xda:
          if (pos + 2 > end) return shortPayload(pos);
          if (b === 0xc5) binLen = view.getUint16(pos);
          else strLen = view.getUint16(pos);
          pos += 2;
          break;
        case 0xc6:
        case 0xdb:
          if (pos + 4 > end) return shortPayload(pos);
          if (b === 0xc6) binLen = view.getUint32(pos);
          else strLen = view.getUint32(pos);
          pos += 4;
          break;
        case 0xc7:
        case 0xc8:
        case 0xc9: {
          const n = b === 0xc7 ? 1 : b === 0xc8 ? 2 : 4;
          if (pos + (n + 1) > end) return shortPayload(pos);
          extLen = n === 1 ? view.getUint8(pos) : n === 2 ? view.getUint16(pos) : view.getUint32(pos);
          pos += n;
          break;
        }
        case 0xca:
          fixed = 4;
          break;
        case 0xcb:
          fixed = 8;
          break;
        case 0xcc:
        case 0xd0:
          fixed = 1;
          break;
        case 0xcd:
        case 0xd1:
          fixed = 2;
          break;
        case 0xce:
        case 0xd2:
          fixed = 4;
          break;
        case 0xcf:
        case 0xd3:
          fixed = 8;
          break;
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8:
          extLen = 1 << (b - 0xd4);
          break;
        case 0xdc:
        case 0xde:
          if (pos + 2 > end) return shortPayload(pos);
          children = view.getUint16(pos);
          map = b === 0xde;
          pos += 2;
          break;
        case 0xdd:
        case 0xdf:
          if (pos + 4 > end) return shortPayload(pos);
          children = view.getUint32(pos);
          map = b === 0xdf;
          pos += 4;
          break;
        default:
          return new PayloadProblem(
            'payload-decode',
            `byte 0x${b.toString(16)} at payload byte ${pos - 1} is not a MessagePack type`,
          );
      }
    }
    if (isKey && strLen < 0) {
      return new PayloadProblem('payload-decode', `map key at payload byte ${pos - 1} is not a string`);
    }
    if (fixed > 0) {
      if (pos + fixed > end) return shortPayload(pos);
      pos += fixed;
    } else if (strLen >= 0 || binLen >= 0) {
      const len = strLen >= 0 ? strLen : binLen;
      if (len > limits.maxStringBytes) {
        return new PayloadProblem(
          'payload-string',
          `a ${len}-byte string exceeds ${limits.maxStringBytes}`,
          'maxStringBytes',
        );
      }
      if (pos + len > end) return shortPayload(pos);
      if (
        isKey &&
        len === 9 &&
        bytes[pos] === 0x5f &&
        Buffer.from(bytes.subarray(pos, pos + len)).toString() === '__proto__'
      ) {
        return new PayloadProblem('payload-decode', 'map key __proto__ is not allowed');
      }
      pos += len;
    } else if (extLen >= 0) {
      if (pos + 1 + extLen > end) return shortPayload(pos);
      const type = view.getInt8(pos);
      if (type !== BLOB_REF_EXT || extLen !== HASH_BYTES) {
        return new PayloadProblem(
          'payload-decode',
          `extension type ${type} of ${extLen} bytes at payload byte ${pos} is not a blob reference`,
        );
      }
      if (refs) refs.push(toHex(bytes.subarray(pos + 1, pos + 1 + HASH_BYTES)));
      pos += 1 + extLen;
    } else if (children > 0) {
      const count = map ? children * 2 : children;
      // Every value takes at least one byte, so a count beyond the bytes left is a lie, not a big payload.
      if (count > end - pos) return shortPayload(pos);
      if (remaining.length + 1 > limits.maxDepth) {
        return new PayloadProblem('payload-depth', `nesting deeper than ${limits.maxDepth}`, 'maxDepth');
      }
      remaining.push(count);
      keyed.push(map);
    }
    while (remaining.length > 0 && remaining[remaining.length - 1] === 0) {
      remaining.pop();
      keyed.pop();
    }
  } while (remaining.length > 0);
  if (pos !== end) return new PayloadProblem('payload-decode', `${end - pos} bytes follow the payload value`);
  return undefined;
}

function shortPayload(pos: number): PayloadProblem {
  return new PayloadProblem('payload-decode', `payload ends inside a value at payload byte ${pos}`);
}

/** One decoder for every payload (it copes with being re-entered), not one built per call. */
const decoder = new Decoder({ extensionCodec: codec, useBigInt64: false });

/** Only call after scanPayload accepted the bytes (which also collects the blob references). */
export function decodePayload(bytes: Uint8Array): unknown {
  return decoder.decode(bytes);
}
