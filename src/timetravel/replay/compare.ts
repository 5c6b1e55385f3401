/**
 * Structural comparison of recorded against live values, after both went through the recorder's tape-value
 * normalisation (undefined dropped, secrets redacted), so a replay compares exactly what the tape could hold.
 */
import { Redactor } from '../../recorder/redact';
import { toTapeValue } from '../../recorder/tapeValue';

// The same defaults a worker uses (environment secrets included), so live values redact as the recorded ones did.
const redactor = new Redactor();

/** The value as a tape would store it. */
export function asRecorded(v: unknown): unknown {
  return toTapeValue(v, redactor);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/**
 * Whether two tape values are equal under the rules of `differences` (undefined and null alike, key order
 * ignored). The replay's fast path: no paths, no allocation, so a matching step costs a plain walk of its new
 * content; `differences` then runs only to explain a mismatch.
 */
export function sameValue(
  a: unknown,
  b: unknown,
  known?: (expected: unknown, actual: unknown) => boolean,
): boolean {
  if (a === b) return true;
  if (a === null || a === undefined) return b === null || b === undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (known?.(a, b)) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i], known)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array)
    return (
      a instanceof Uint8Array &&
      b instanceof Uint8Array &&
      Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0
    );
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) if (!sameValue(x[k], y[k], known)) return false;
  // A key only b has must be undefined or null there, as a missing one is in a.
  for (const k in y) if (!(k in x) && y[k] !== undefined && y[k] !== null) return false;
  return true;
}

/** Paths (`messages[2].content`) where the two values differ; empty when equal. At most `limit` paths. */
export function differences(
  expected: unknown,
  actual: unknown,
  limit = 20,
  /** Pairs already known equal (a replay's previously verified messages): skipped without a walk. */
  known?: (expected: unknown, actual: unknown) => boolean,
): string[] {
  const out: string[] = [];
  // The path is a stack of parts joined only when a difference is found: equal values, the common case on a
  // replay, then allocate no path strings.
  const parts: (string | number)[] = [];
  const here = () =>
    parts.reduce<string>((at, p) => (typeof p === 'number' ? `${at}[${p}]` : at ? `${at}.${p}` : p), '') ||
    '(value)';
  const walk = (a: unknown, b: unknown) => {
    if (out.length >= limit || a === b || known?.(a, b)) return;
    if (Array.isArray(a) && Array.isArray(b)) {
      const n = Math.max(a.length, b.length);
      for (let i = 0; i < n && out.length < limit; i++) {
        parts.push(i);
        // An element only one side has differs even when it is null: a list's length is part of its value.
        if (i >= a.length || i >= b.length) out.push(here());
        else walk(a[i], b[i]);
        parts.pop();
      }
      return;
    }
    if (isObject(a) && isObject(b)) {
      const ka = Object.keys(a);
      const kb = Object.keys(b);
      // Same keys in the same order (the common case): no merged, sorted key list to build.
      const keys =
        ka.length === kb.length && ka.every((k, i) => k === kb[i]) ? ka : [...new Set([...ka, ...kb])].sort();
      for (const k of keys) {
        parts.push(k);
        walk(a[k], b[k]);
        parts.pop();
      }
      return;
    }
    if (a instanceof Uint8Array && b instanceof Uint8Array) {
      if (Buffer.compare(Buffer.from(a), Buffer.from(b)) !== 0) out.push(here());
      return;
    }
    if (!Object.is(a, b) && !(a === undefined && b === null) && !(a === null && b === undefined))
      out.push(here());
  };
  walk(expected, actual);
  return out;
}

/** Only the values at the differing paths, so a divergence report stays readable for long conversations. */
export function pick(v: unknown, paths: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of paths) {
    let cur: unknown = v;
    for (const part of p.split(/\.|\[(\d+)\]/).filter((x) => x !== undefined && x !== '')) {
      if (cur === null || cur === undefined) break;
      cur = (cur as Record<string, unknown>)[part];
    }
    out[p] = cur;
  }
  return out;
}
