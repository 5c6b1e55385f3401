import { createHash } from 'node:crypto';

/** Lowercase, punctuation and extra spacing removed: what "word for word" means to the exact detector. */
export function normalizeText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

export const shortHash = (text: string): string =>
  createHash('sha256').update(text).digest('base64url').slice(0, 22);

/** 32-bit FNV-1a: cheap, stable bucket numbers for n-gram hashing. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(canonical);
    // Scalar lists are compared as sets: a loop that reshuffles ids is the same call. Object lists keep order.
    return items.every((v) => v === null || typeof v !== 'object')
      ? [...items].sort((a, b) => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0))
      : items;
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort())
      out[key] = canonical((value as Record<string, unknown>)[key]);
    return out;
  }
  return typeof value === 'string' ? value.trim() : value;
}

/** The tool call with argument order, key order and scalar-list order erased. */
export const canonicalToolCall = (name: string, args: Record<string, unknown>): string =>
  `${name}(${JSON.stringify(canonical(args))})`;

const NGRAM_BUCKETS = 4096;

/** Hashed character 3-gram counts of the normalized text: the local embedder's vector (sparse TF). */
export function charTrigrams(normalized: string): Record<string, number> {
  const out: Record<string, number> = {};
  const s = ` ${normalized} `;
  for (let i = 0; i + 3 <= s.length; i++) {
    const b = String(fnv1a(s.slice(i, i + 3)) % NGRAM_BUCKETS);
    out[b] = (out[b] ?? 0) + 1;
  }
  return out;
}
