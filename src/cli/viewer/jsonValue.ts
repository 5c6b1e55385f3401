/**
 * Tape payloads made fit for JSON: blob references resolved (bounded), bytes shown as text when they are UTF-8,
 * long strings clipped. Tapes are untrusted input, so every bound here keeps one hostile frame from making the
 * viewer's answers huge.
 */
import { BlobRef, derefValue, type Tape } from '../../recorder/tape';

export interface JsonLimits {
  /** Characters kept of one string (the rest replaced by a note of how many were cut). */
  maxString: number;
  /** Nesting followed, blob references included. */
  maxDepth: number;
  /** Elements kept of one array or entries of one map. */
  maxItems: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxString: 20_000, maxDepth: 12, maxItems: 500 };

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}… [${s.length - max} more characters]` : s;
}

/** Bytes as their text when they are valid UTF-8 without control bytes, else a short hex preview. */
export function bytesText(b: Uint8Array, max = DEFAULT_JSON_LIMITS.maxString): string {
  try {
    const text = utf8.decode(b);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: binary sniffing is the point
    if (!/[\u0000-\u0008\u000e-\u001f]/.test(text)) return clip(text, max);
  } catch {}
  const hex = Buffer.from(b.subarray(0, 64)).toString('hex');
  return `<${b.byteLength} bytes: ${hex}${b.byteLength > 64 ? '…' : ''}>`;
}

export function jsonValue(
  tape: Pick<Tape, 'blobs'>,
  value: unknown,
  limits: JsonLimits = DEFAULT_JSON_LIMITS,
  depth = 0,
): unknown {
  if (value === null || value === undefined) return value ?? null;
  if (typeof value === 'string') return clip(value, limits.maxString);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (depth >= limits.maxDepth) return '[nested too deep]';
  if (value instanceof BlobRef) {
    const v = derefValue(tape, value);
    return v === undefined ? `[missing blob ${value.hash}]` : jsonValue(tape, v, limits, depth + 1);
  }
  if (value instanceof Uint8Array) return bytesText(value, limits.maxString);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) {
    const out = value.slice(0, limits.maxItems).map((v) => jsonValue(tape, v, limits, depth + 1));
    if (value.length > limits.maxItems) out.push(`[${value.length - limits.maxItems} more items]`);
    return out;
  }
  if (value instanceof Map) return jsonValue(tape, Object.fromEntries(value), limits, depth);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (n++ >= limits.maxItems) {
        out['…'] = `[${Object.keys(value as object).length - limits.maxItems} more keys]`;
        break;
      }
      out[clip(k, 200)] = jsonValue(tape, v, limits, depth + 1);
    }
    return out;
  }
  return String(value);
}
