import { describe, expect, it } from 'vitest';
import { hasHiddenCharacters, printable, printableJson, quoted } from '../../src/errors';

describe('printable names', () => {
  it('shows a plain name as it is, including spaces, quotes of other kinds and non-Latin letters', () => {
    for (const name of ['ledger.csv', 'a b/c.txt', "it's", 'файл.txt', '日本.md', 'emoji 🎉.txt'])
      expect(printable(name)).toBe(name);
  });

  it('quotes and escapes controls, bidi and invisible format characters, so one name stays one line', () => {
    expect(printable('a\nb')).toBe('"a\\nb"');
    expect(printable('a\r\tb')).toBe('"a\\r\\tb"');
    expect(printable('\x1b[31mred')).toBe('"\\u001b[31mred"');
    expect(printable('\x7f\x85')).toBe('"\\u007f\\u0085"');
    expect(printable('invoice\u202Etxt.exe')).toBe('"invoice\\u202etxt.exe"');
    expect(printable('\u2066x\u2069 \u200Bzw \u2028ls \uFEFFbom \u061Calm')).toBe(
      '"\\u2066x\\u2069 \\u200bzw \\u2028ls \\ufeffbom \\u061calm"',
    );
  });

  it('quotes a backslash or a double quote, so no plain name looks like an escaped one', () => {
    expect(printable('a\\nb')).toBe('"a\\\\nb"');
    expect(printable('"a\\nb"')).toBe('"\\"a\\\\nb\\""');
    expect(printable('a\\nb')).not.toBe(printable('a\nb'));
  });

  it('quoted() always quotes and parses back as JSON to the same name', () => {
    for (const name of ['plain', 'a\nb', 'x\u202Ey', 'q"\\', '\x00\x1f\x9f'])
      expect(JSON.parse(quoted(name))).toBe(name);
    expect(quoted('plain')).toBe('"plain"');
  });

  it('printableJson escapes what JSON.stringify leaves raw and parses back to the same value', () => {
    const value = { path: 'a\u202Eb\u2028c\x85', n: 1 };
    const s = printableJson(value);
    expect(hasHiddenCharacters(s)).toBe(false);
    expect(s).toBe('{"path":"a\\u202eb\\u2028c\\u0085","n":1}');
    expect(JSON.parse(s)).toEqual(value);
    expect(printableJson(undefined)).toBe('undefined');
    const pretty = printableJson({ a: ['x\u202E'] }, 2);
    expect(pretty).toBe('{\n  "a": [\n    "x\\u202e"\n  ]\n}');
    expect(JSON.parse(pretty)).toEqual({ a: ['x\u202E'] });
  });
});
