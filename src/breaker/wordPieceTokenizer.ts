/**
 * BERT's uncased WordPiece tokenizer, read from a Hugging Face `tokenizer.json` (BertNormalizer,
 * BertPreTokenizer, WordPiece model, [CLS] ... [SEP] template): what the sentence-embedding model was trained
 * with, in a few dozen lines instead of a tokenizer library.
 */

export interface TokenizerJson {
  normalizer?: { type?: string; lowercase?: boolean; strip_accents?: boolean | null };
  pre_tokenizer?: { type?: string };
  model?: {
    type?: string;
    vocab?: Record<string, number>;
    unk_token?: string;
    continuing_subword_prefix?: string;
    max_input_chars_per_word?: number;
  };
}

export class TokenizerFormatError extends Error {}

const isControl = (ch: string) => ch !== '\t' && ch !== '\n' && ch !== '\r' && /\p{C}/u.test(ch);
const isWhitespace = (ch: string) => /\s/u.test(ch);
const isPunctuation = (ch: string) => {
  const c = ch.codePointAt(0)!;
  // BERT counts every non-letter/number ASCII symbol as punctuation ($, +, ^, `...), plus Unicode's P* classes.
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
    return true;
  return /\p{P}/u.test(ch);
};
const isCjk = (c: number) =>
  (c >= 0x4e00 && c <= 0x9fff) ||
  (c >= 0x3400 && c <= 0x4dbf) ||
  (c >= 0x20000 && c <= 0x2a6df) ||
  (c >= 0x2a700 && c <= 0x2b73f) ||
  (c >= 0x2b740 && c <= 0x2b81f) ||
  (c >= 0x2b820 && c <= 0x2ceaf) ||
  (c >= 0xf900 && c <= 0xfaff) ||
  (c >= 0x2f800 && c <= 0x2fa1f);

export class WordPieceTokenizer {
  private readonly vocab: Map<string, number>;
  private readonly unk: number;
  private readonly prefix: string;
  private readonly maxWordChars: number;
  private readonly lowercase: boolean;
  private readonly stripAccents: boolean;
  readonly cls: number;
  readonly sep: number;

  constructor(json: TokenizerJson) {
    const m = json.model;
    if (m?.type !== 'WordPiece' || !m.vocab)
      throw new TokenizerFormatError(`expected a WordPiece model with a vocab (got ${String(m?.type)})`);
    if (json.pre_tokenizer?.type !== 'BertPreTokenizer')
      throw new TokenizerFormatError(`expected a BertPreTokenizer (got ${String(json.pre_tokenizer?.type)})`);
    this.vocab = new Map(Object.entries(m.vocab));
    const id = (token: string) => {
      const v = this.vocab.get(token);
      if (v === undefined) throw new TokenizerFormatError(`the vocab has no ${token} token`);
      return v;
    };
    this.unk = id(m.unk_token ?? '[UNK]');
    this.cls = id('[CLS]');
    this.sep = id('[SEP]');
    this.prefix = m.continuing_subword_prefix ?? '##';
    this.maxWordChars = m.max_input_chars_per_word ?? 100;
    this.lowercase = json.normalizer?.lowercase ?? true;
    // Hugging Face: strip_accents null means "whatever lowercase says".
    this.stripAccents = json.normalizer?.strip_accents ?? this.lowercase;
  }

  private normalize(text: string): string {
    let out = '';
    for (const ch of text) {
      const c = ch.codePointAt(0)!;
      if (c === 0 || c === 0xfffd || isControl(ch)) continue;
      if (isWhitespace(ch)) out += ' ';
      else if (isCjk(c)) out += ` ${ch} `;
      else out += ch;
    }
    if (this.lowercase) out = out.toLowerCase();
    if (this.stripAccents) out = out.normalize('NFD').replace(/\p{Mn}/gu, '');
    return out;
  }

  private preTokenize(text: string): string[] {
    const words: string[] = [];
    let word = '';
    for (const ch of text) {
      if (isWhitespace(ch)) {
        if (word) words.push(word);
        word = '';
      } else if (isPunctuation(ch)) {
        if (word) words.push(word);
        words.push(ch);
        word = '';
      } else word += ch;
    }
    if (word) words.push(word);
    return words;
  }

  private wordPiece(word: string, out: number[]): void {
    const chars = [...word];
    if (chars.length > this.maxWordChars) {
      out.push(this.unk);
      return;
    }
    const pieces: number[] = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found: number | undefined;
      while (start < end) {
        const piece = (start > 0 ? this.prefix : '') + chars.slice(start, end).join('');
        found = this.vocab.get(piece);
        if (found !== undefined) break;
        end--;
      }
      if (found === undefined) {
        out.push(this.unk);
        return;
      }
      pieces.push(found);
      start = end;
    }
    out.push(...pieces);
  }

  /** Token ids of one text: [CLS] pieces... [SEP], cut to maxLength (the [SEP] kept). */
  encode(text: string, maxLength = 256): number[] {
    const ids: number[] = [this.cls];
    for (const word of this.preTokenize(this.normalize(text))) {
      this.wordPiece(word, ids);
      if (ids.length >= maxLength - 1) break;
    }
    ids.length = Math.min(ids.length, maxLength - 1);
    ids.push(this.sep);
    return ids;
  }
}
