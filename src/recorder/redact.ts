/**
 * Scrubs secrets from everything the recorder writes, before it is encoded and hashed: a tape is meant to be
 * shared and replayed elsewhere, and a key inside a hashed frame could never be removed without breaking the
 * chain.
 */
export const REDACTED = '[REDACTED]';

export const DEFAULT_SECRET_PATTERNS: readonly RegExp[] = [
  /sk-ant-[A-Za-z0-9_-]{8,}/g,
  /sk-[A-Za-z0-9_-]{8,}/g,
  /Bearer\s+[A-Za-z0-9._~+/=-]{8,}/g,
];

/** Env var names whose values are secrets wherever they show up. */
export const SECRET_ENV_NAME = /(_API_KEY|_TOKEN|_SECRET)$/;

// Compared lower-cased with '-' and '_' removed, so `x-api-key`, `X_API_KEY` and `xApiKey` all match.
const SECRET_KEYS = new Set([
  'authorization',
  'proxyauthorization',
  'xapikey',
  'apikey',
  'password',
  'secret',
  'clientsecret',
  'token',
  'accesstoken',
  'refreshtoken',
  'cookie',
  'setcookie',
]);

// Shorter literals would redact ordinary words (the local model server's key is "local").
const MIN_LITERAL_SECRET = 8;

export interface RedactionOptions {
  /** Extra patterns, added to DEFAULT_SECRET_PATTERNS (strings are compiled as regular expressions). */
  patterns?: readonly (RegExp | string)[];
  /** Replace the defaults instead of adding to them. */
  replaceDefaultPatterns?: boolean;
  /** Literal secret values, e.g. the API keys the worker was configured with. */
  secrets?: readonly string[];
  /** Where to find `*_API_KEY` / `*_TOKEN` / `*_SECRET` values; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Extra object keys whose values are always redacted. */
  keys?: readonly string[];
}

/** How many object keys a Redactor remembers its verdict for (keys are few; a hostile object's are not). */
const DECIDED_KEYS = 1024;

const normKey = (k: string) => k.toLowerCase().replace(/[-_]/g, '');
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class Redactor {
  private readonly literals: RegExp | undefined;
  private readonly patterns: RegExp[];
  private readonly keys: Set<string>;
  private readonly decided = new Map<string, boolean>();

  constructor(options: RedactionOptions = {}) {
    const env = options.env ?? process.env;
    const literals = new Set<string>();
    for (const s of options.secrets ?? []) if (s.length >= MIN_LITERAL_SECRET) literals.add(s);
    for (const [name, value] of Object.entries(env)) {
      if (value && value.length >= MIN_LITERAL_SECRET && SECRET_ENV_NAME.test(name)) literals.add(value);
    }
    // Longest first, so a secret that contains another is replaced whole.
    const sorted = [...literals].sort((a, b) => b.length - a.length);
    this.literals = sorted.length ? new RegExp(sorted.map(escapeRegExp).join('|'), 'g') : undefined;
    const extra = (options.patterns ?? []).map((p) =>
      typeof p === 'string'
        ? new RegExp(p, 'g')
        : new RegExp(p.source, p.flags.includes('g') ? p.flags : `${p.flags}g`),
    );
    this.patterns = [...(options.replaceDefaultPatterns ? [] : DEFAULT_SECRET_PATTERNS), ...extra];
    this.keys = new Set([...SECRET_KEYS, ...(options.keys ?? []).map(normKey)]);
  }

  isSecretKey(key: string): boolean {
    // The same few keys come back in every frame (data, role, content, ...): each is decided once.
    let secret = this.decided.get(key);
    if (secret === undefined) {
      const k = normKey(key);
      secret = this.keys.has(k) || k.endsWith('apikey') || k.endsWith('secret') || k.endsWith('password');
      if (this.decided.size < DECIDED_KEYS) this.decided.set(key, secret);
    }
    return secret;
  }

  redactString(s: string): string {
    let out = this.literals ? s.replace(this.literals, REDACTED) : s;
    for (const p of this.patterns) out = out.replace(p, REDACTED);
    return out;
  }
}
