/**
 * Turns whatever an activity received or returned into a value the tape accepts (canonical MessagePack:
 * string keys, no undefined, no Dates or bigints, no cycles), redacting secrets on the way.
 */

import { REDACTED, type Redactor } from './redact';
import { BlobRef } from './tape';

const MAX_DEPTH = 48;

export function toTapeValue(value: unknown, redactor: Redactor): unknown {
  // Most values recorded per streamed chunk are strings: no walk to set up for them.
  if (typeof value === 'string') return redactor.redactString(value);
  return walk(value, 0, new WeakSet<object>(), redactor);
}

/** One function for every call (not a closure made per value): it runs for every streamed chunk recorded. */
function walk(v: unknown, depth: number, seen: WeakSet<object>, redactor: Redactor): unknown {
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'string') return redactor.redactString(v);
  if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return undefined;
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof BlobRef) return v;
  if (v instanceof Uint8Array) return redactBytes(v, redactor);
  if (v instanceof Date) return v.getTime();
  if (depth > MAX_DEPTH) return '[truncated: nested too deep]';
  if (seen.has(v)) return '[circular]';
  seen.add(v);
  try {
    if (v instanceof Error) return errorValue(v, redactor);
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1, seen, redactor) ?? null);
    if (v instanceof Set) return [...v].map((x) => walk(x, depth + 1, seen, redactor) ?? null);
    const entries = v instanceof Map ? [...v.entries()] : Object.entries(v as Record<string, unknown>);
    const out: Record<string, unknown> = {};
    for (const [k, x] of entries) {
      const key = String(k);
      if (key === '__proto__') continue;
      if (redactor.isSecretKey(key) && x !== undefined && x !== null) out[key] = REDACTED;
      else {
        const w = walk(x, depth + 1, seen, redactor);
        if (w !== undefined) out[key] = w;
      }
    }
    return out;
  } finally {
    seen.delete(v);
  }
}

/**
 * Bytes (file contents, command output) are scanned as latin1: every byte maps to one character, so ASCII
 * secrets match inside text and binary alike, and the bytes around a redaction come back unchanged.
 */
function redactBytes(v: Uint8Array, redactor: Redactor): Uint8Array {
  const text = Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('latin1');
  const clean = redactor.redactString(text);
  if (clean === text) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return new Uint8Array(Buffer.from(clean, 'latin1'));
}

export interface ErrorValue {
  name: string;
  message: string;
  code?: string;
  type?: string;
  nonRetryable: boolean;
}

/** The error fields a tape keeps; `type` is an ApplicationFailure's original error class. */
export function errorValue(err: unknown, redactor: Redactor): ErrorValue {
  if (!(err instanceof Error))
    return { name: 'Error', message: redactor.redactString(String(err)), nonRetryable: false };
  const e = err as Error & { code?: unknown; type?: unknown; nonRetryable?: unknown };
  const out: ErrorValue = {
    name: e.name,
    message: redactor.redactString(e.message),
    nonRetryable: e.nonRetryable === true,
  };
  if (typeof e.code === 'string') out.code = e.code;
  if (typeof e.type === 'string') out.type = e.type;
  return out;
}
