/**
 * Tape payload values made fit for JSON, for items sent to browsers: blob references resolved (bounded),
 * bytes as UTF-8 text or a hex preview, long strings and collections clipped. A tape is untrusted input, so
 * these bounds keep one hostile frame from making an item huge.
 */
import { BlobRef, derefValue, type TapeBlob } from '../recorder/tape';

const MAX_STRING = 20_000;
const MAX_DEPTH = 12;
const MAX_ITEMS = 500;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function clip(s: string): string {
  return s.length > MAX_STRING ? `${s.slice(0, MAX_STRING)}… [${s.length - MAX_STRING} more characters]` : s;
}

function bytesText(b: Uint8Array): string {
  try {
    const text = utf8.decode(b);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: binary sniffing is the point
    if (!/[\u0000-\u0008\u000e-\u001f]/.test(text)) return clip(text);
  } catch {}
  return `<${b.byteLength} bytes: ${Buffer.from(b.subarray(0, 64)).toString('hex')}${b.byteLength > 64 ? '…' : ''}>`;
}

export function plainValue(blobs: ReadonlyMap<string, TapeBlob>, value: unknown, depth = 0): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return clip(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (depth >= MAX_DEPTH) return '[nested too deep]';
  if (value instanceof BlobRef) {
    const v = derefValue(blobs as Map<string, TapeBlob>, value);
    return v === undefined ? `[missing blob ${value.hash}]` : plainValue(blobs, v, depth + 1);
  }
  if (value instanceof Uint8Array) return bytesText(value);
  if (Array.isArray(value)) {
    const out = value.slice(0, MAX_ITEMS).map((v) => plainValue(blobs, v, depth + 1));
    if (value.length > MAX_ITEMS) out.push(`[${value.length - MAX_ITEMS} more items]`);
    return out;
  }
  if (value instanceof Map) return plainValue(blobs, Object.fromEntries(value), depth);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const [k, v] of Object.entries(value)) {
      if (n++ >= MAX_ITEMS) {
        out['…'] = `[${Object.keys(value).length - MAX_ITEMS} more entries]`;
        break;
      }
      out[k] = plainValue(blobs, v, depth + 1);
    }
    return out;
  }
  return String(value);
}
