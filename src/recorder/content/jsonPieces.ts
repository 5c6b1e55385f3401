/**
 * A JSON text as content-addressed pieces (docs/tape-store.md, "The content store"). Every string, object and
 * array whose JSON text reaches `minBlobChars` is its own blob, and a long array is cut into fixed groups of
 * `groupSize` elements from its start (groups of groups past `groupSize²`), so a conversation resent with one
 * more message reuses every blob of the previous request but the last group and the root. In its parent a piece
 * is replaced by a token, the JSON text `{"\u0000":"<hash>"}`; joining replaces each token by its blob's text,
 * recursively, which gives back the original text byte for byte.
 *
 * A blob is a UTF-8 fragment of JSON: a value, or (a group) the comma-separated elements of part of an array.
 */
import { CONTENT_HASH, contentHash } from './contentStore';
import { ContentDamagedError } from './errors';

export interface PieceOptions {
  /** JSON text length from which a value is its own blob (default 256). */
  minBlobChars?: number;
  /** Array elements per group (default 32). */
  groupSize?: number;
}

export const DEFAULT_MIN_BLOB_CHARS = 256;
export const DEFAULT_GROUP_SIZE = 32;

const TOKEN_START = '{"\\u0000":"';
const TOKEN_END = '"}';
const TOKEN = /\{"\\u0000":"([0-9a-f]{64})"\}/g;
/** A text holding this could contain an object that reads as a token: it is stored whole, never split. */
const TOKEN_LOOKALIKE = '"\\u0000":"';

const token = (hash: string) => `${TOKEN_START}${hash}${TOKEN_END}`;

export interface SplitJson {
  /** The blob whose text, joined, is the whole JSON text. */
  root: string;
  /** Every blob of the text, root included, by hash. */
  blobs: Map<string, Uint8Array>;
}

/**
 * Cuts `text` into pieces. Undefined when it cannot be done faithfully: not JSON, a text that does not read back
 * as itself (JSON.stringify of what it parses to is another text), or one that could hold a token lookalike.
 */
export function splitJson(text: string, options: PieceOptions = {}): SplitJson | undefined {
  if (text.includes(TOKEN_LOOKALIKE)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const min = options.minBlobChars ?? DEFAULT_MIN_BLOB_CHARS;
  const group = Math.max(2, options.groupSize ?? DEFAULT_GROUP_SIZE);
  const blobs = new Map<string, Uint8Array>();
  // Each piece is [its text in the parent, the length of the text it stands for].
  type Piece = [string, number];
  const blob = (text: string, length: number): Piece => {
    const bytes = Buffer.from(text, 'utf8');
    const hash = contentHash(bytes);
    blobs.set(hash, bytes);
    return [token(hash), length];
  };
  const maybeBlob = (piece: Piece): Piece => (piece[0].length >= min ? blob(piece[0], piece[1]) : piece);
  const joinPieces = (pieces: Piece[], open: string, close: string): Piece => {
    let length = open.length + close.length + Math.max(0, pieces.length - 1);
    for (const p of pieces) length += p[1];
    return [open + pieces.map((p) => p[0]).join(',') + close, length];
  };
  const walk = (v: unknown): Piece => {
    if (typeof v === 'string') {
      const s = JSON.stringify(v);
      return maybeBlob([s, s.length]);
    }
    if (v === null || typeof v !== 'object') {
      const s = JSON.stringify(v);
      return [s, s.length];
    }
    if (Array.isArray(v)) {
      // Groups start at index 0 and hold `group` pieces each; the tail that does not fill one stays inline.
      let level: Piece[] = v.map(walk);
      const tails: Piece[][] = [];
      while (level.length >= group) {
        const full = level.length - (level.length % group);
        tails.push(level.slice(full));
        const next: Piece[] = [];
        for (let i = 0; i < full; i += group)
          next.push(blob(...joinPieces(level.slice(i, i + group), '', '')));
        level = next;
      }
      const items = [...level, ...tails.reverse().flat()];
      return maybeBlob(joinPieces(items, '[', ']'));
    }
    const entries = Object.entries(v as Record<string, unknown>).map(([k, x]): Piece => {
      const key = `${JSON.stringify(k)}:`;
      const [t, l] = walk(x);
      return [key + t, key.length + l];
    });
    return maybeBlob(joinPieces(entries, '{', '}'));
  };
  const [rootText, length] = walk(value);
  if (length !== text.length) return undefined;
  const m = /^\{"\\u0000":"([0-9a-f]{64})"\}$/.exec(rootText);
  if (m) return { root: m[1]!, blobs };
  const [rootToken] = blob(rootText, length);
  return { root: rootToken.slice(TOKEN_START.length, -TOKEN_END.length), blobs };
}

export interface JoinLimits {
  /** The joined text may not be longer than this (a damaged store must not expand without end). */
  maxChars: number;
  /** Blobs nested deeper than this are damage (default 64). */
  maxDepth?: number;
  /** Blob reads in flight at once (default 32). */
  concurrency?: number;
}

/**
 * The text `root` stands for, every token replaced by its blob's text. `fetch` returns a blob's verified
 * bytes or throws (ContentMissingError, ContentDamagedError); `store` names the store in messages.
 */
export async function joinJson(
  root: string,
  fetch: (hash: string) => Promise<Uint8Array>,
  store: string,
  limits: JoinLimits,
): Promise<string> {
  const maxDepth = limits.maxDepth ?? 64;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const memo = new Map<string, Promise<string>>();
  let running = 0;
  const waiting: (() => void)[] = [];
  const limit = limits.concurrency ?? 32;
  const read = async (hash: string): Promise<Uint8Array> => {
    if (running >= limit) await new Promise<void>((r) => waiting.push(r));
    running++;
    try {
      return await fetch(hash);
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
  const expand = (hash: string, depth: number): Promise<string> => {
    let p = memo.get(hash);
    if (!p) {
      p = (async () => {
        if (depth > maxDepth)
          throw new ContentDamagedError(root, store, `its pieces nest more than ${maxDepth} deep`);
        let text: string;
        try {
          text = decoder.decode(await read(hash));
        } catch (err) {
          if (err instanceof TypeError)
            throw new ContentDamagedError(hash, store, 'its bytes are not UTF-8 text');
          throw err;
        }
        const hashes = [...new Set([...text.matchAll(TOKEN)].map((m) => m[1]!))];
        if (hashes.length === 0) return text;
        const parts = new Map<string, string>();
        await Promise.all(
          hashes.map(async (h) => {
            parts.set(h, await expand(h, depth + 1));
          }),
        );
        const out = text.replace(TOKEN, (_t, h: string) => parts.get(h)!);
        if (out.length > limits.maxChars)
          throw new ContentDamagedError(
            root,
            store,
            `its pieces join to more than ${limits.maxChars} characters`,
          );
        return out;
      })();
      memo.set(hash, p);
    }
    return p;
  };
  if (!CONTENT_HASH.test(root))
    throw new ContentDamagedError(root, store, 'the reference is not a blob name');
  return expand(root, 0);
}
