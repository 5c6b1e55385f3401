/**
 * A deep copy of tape data (what MessagePack decodes to: null, booleans, numbers, strings, arrays, plain
 * objects, bytes). Replay hands every recorded answer to agent code that may mutate it, and copies it once a
 * step; a walk over plain data is several times cheaper than `structuredClone`'s serializer for such values.
 */
export function plainClone<T>(value: T): T {
  return copy(value) as T;
}

function copy(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = copy(v[i]);
    return out;
  }
  if (v instanceof Uint8Array) return v.slice();
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const k in v as Record<string, unknown>) out[k] = copy((v as Record<string, unknown>)[k]);
  return out;
}
