/**
 * Structural comparison of recorded against live values, after both went through the recorder's tape-value
 * normalisation (undefined dropped, secrets redacted), so a replay compares exactly what the tape could hold.
 */
import { Redactor } from '../recorder/redact';
import { toTapeValue } from '../recorder/tapeValue';

// The same defaults a worker uses (environment secrets included), so live values redact as the recorded ones did.
const redactor = new Redactor();

/** The value as a tape would store it. */
export function asRecorded(v: unknown): unknown {
  return toTapeValue(v, redactor);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
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
  const walk = (a: unknown, b: unknown, at: string) => {
    if (out.length >= limit || a === b || known?.(a, b)) return;
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], `${at}[${i}]`);
      return;
    }
    if (isObject(a) && isObject(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const k of keys) walk(a[k], b[k], at ? `${at}.${k}` : k);
      return;
    }
    if (a instanceof Uint8Array && b instanceof Uint8Array) {
      if (Buffer.compare(Buffer.from(a), Buffer.from(b)) !== 0) out.push(at || '(value)');
      return;
    }
    if (!Object.is(a, b) && !(a === undefined && b === null) && !(a === null && b === undefined))
      out.push(at || '(value)');
  };
  walk(expected, actual, '');
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
