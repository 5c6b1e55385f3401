import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { differences, sameValue } from '../../../src/timetravel/replay/compare';

// Values as a tape holds them, with the undefined/null and missing-key cases the audit treats alike.
const tapeValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, undefined, true, false, 0, -0, 1, Number.NaN),
    fc.integer(),
    fc.string({ maxLength: 4 }),
    fc.uint8Array({ maxLength: 4 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('value'), { maxKeys: 3 }),
  ),
})).value;

describe('the replay fast path agrees with the divergence audit', () => {
  it('sameValue is true exactly when differences finds no path, for arbitrary and for near-equal values', () => {
    fc.assert(
      fc.property(tapeValue, tapeValue, (a, b) => {
        expect(sameValue(a, b)).toBe(differences(a, b).length === 0);
        expect(sameValue(a, structuredClone(a))).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it('a key missing on one side equals undefined or null on the other, and nothing else', () => {
    expect(sameValue({ a: 1 }, { a: 1, b: null })).toBe(true);
    expect(sameValue({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameValue({ a: 1 }, { a: 1, b: 0 })).toBe(false);
    expect(differences({ a: 1 }, { a: 1, b: 0 })).toEqual(['b']);
    // A list's length is part of its value, null elements included.
    expect(sameValue([null], [])).toBe(false);
    expect(differences({ m: [null] }, { m: [] })).toEqual(['m[0]']);
  });
});
