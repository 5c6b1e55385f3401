/**
 * JSON-safe encoding of SQL parameters and row values, so the statement log, the tape frames and undo images
 * carry bytes, big integers and dates without loss and decode back to what the driver accepts.
 */
export type Encoded = null | boolean | number | string | Encoded[] | { [k: string]: Encoded };

export function encodeValue(v: unknown): Encoded {
  if (v === undefined || v === null) return null;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('base64') };
  if (typeof v === 'bigint') return { $bigint: v.toString() };
  if (v instanceof Date) return { $date: v.toISOString() };
  if (Array.isArray(v)) return v.map(encodeValue);
  if (typeof v === 'object') {
    const out: Record<string, Encoded> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = encodeValue(x);
    return { $object: out };
  }
  if (typeof v === 'number' && !Number.isFinite(v)) return { $number: String(v) };
  return v as Encoded;
}

export function decodeValue(v: Encoded): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(decodeValue);
  if (typeof v.$bytes === 'string') return Buffer.from(v.$bytes, 'base64');
  if (typeof v.$bigint === 'string') return BigInt(v.$bigint);
  if (typeof v.$date === 'string') return new Date(v.$date);
  if (typeof v.$number === 'string') return Number(v.$number);
  if (v.$object !== undefined && typeof v.$object === 'object' && !Array.isArray(v.$object)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v.$object as Record<string, Encoded>)) out[k] = decodeValue(x);
    return out;
  }
  return v;
}

export type Bindings = readonly unknown[] | Record<string, unknown>;

export function encodeBindings(b: Bindings | undefined): Encoded {
  if (b === undefined) return [];
  if (Array.isArray(b)) return b.map(encodeValue);
  return encodeValue(b);
}

export function decodeBindings(e: Encoded): Bindings {
  const v = decodeValue(e);
  return (v ?? []) as Bindings;
}
