/**
 * Names and values as they may be shown to a person or a model: file names are bytes an agent chose, and a
 * newline, a carriage return, an ANSI escape or a bidirectional override in one would forge lines or reorder
 * what a reviewer reads in a change summary, an error, a terminal or the viewer. Every such character is
 * escaped; a name that needs no escaping is shown as it is.
 */

/**
 * C0 and C1 controls, DEL, and the invisible format characters that change how text around them is laid out or
 * read: bidi marks, embeddings, overrides and isolates, zero-width characters, line and paragraph separators,
 * the byte-order mark and the interlinear annotation marks.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/;
const HIDDEN_ALL = new RegExp(HIDDEN.source, 'g');
/** What JSON.stringify leaves raw: the hidden characters above C0 (it escapes C0 itself, and indents with \n). */
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g;
/** Also a backslash or a double quote: a name containing them would otherwise look like an escaped one. */
const NEEDS_QUOTES = new RegExp(`${HIDDEN.source}|[\\\\"]`);

const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '"': '\\"', '\\': '\\\\' };

function escapeChar(c: string): string {
  const short = SHORT[c];
  if (short !== undefined) return short;
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** True when `s` holds a character that changes how the text around it is shown. */
export function hasHiddenCharacters(s: string): boolean {
  return HIDDEN.test(s);
}

/**
 * `s` as one safe line: unchanged when it holds nothing to escape, otherwise in double quotes with `\n`, `\r`,
 * `\t`, `\uHHHH`, `\\` and `\"` escapes (so `a"b` and `a\nb` never look alike).
 */
export function printable(s: string): string {
  if (!NEEDS_QUOTES.test(s)) return s;
  return quoted(s);
}

/**
 * Free text (an error message, a tool's output) as one line: every hidden character escaped as `printable`
 * does, without quotes, so a message can neither break the line it is shown on nor reorder it.
 */
export function oneLine(s: string): string {
  return s.replace(HIDDEN_ALL, escapeChar);
}

/** `s` always in double quotes, escaped as `printable` does: a JSON string literal that is also safe to show. */
export function quoted(s: string): string {
  let out = '"';
  for (const c of s) out += NEEDS_QUOTES.test(c) ? escapeChar(c) : c;
  return `${out}"`;
}

/**
 * `JSON.stringify` whose output is safe to show: the format characters and C1 controls JSON leaves raw are
 * written as `\uHHHH` escapes, which parse back to the same value.
 */
export function printableJson(value: unknown, space?: number): string {
  const s = JSON.stringify(value, null, space);
  if (s === undefined) return 'undefined';
  return s.replace(RAW_IN_JSON, escapeChar);
}
