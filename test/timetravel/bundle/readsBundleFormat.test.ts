import { describe, expect, it } from 'vitest';
import { blake3 } from '../../../src/recorder/tape';
import {
  BundleCorruptError,
  BundleMagicError,
  BundleTruncatedError,
  BundleVersionError,
  decodeBundle,
  encodeBundle,
  looksLikeBundle,
} from '../../../src/timetravel/bundle';

const enc = (s: string) => new TextEncoder().encode(s);
const sample = () =>
  encodeBundle([
    { kind: 'manifest', name: 'manifest.json', data: enc('{"format":1}') },
    { kind: 'tape', name: 't.jbx', data: enc('tape bytes') },
    { kind: 'workflowCode', name: 'workflow-bundle.js', data: enc('var x = 1;') },
  ]);

describe('the .jbxb container', () => {
  it('lays parts out as BUNDLE.md says and reads them back', () => {
    const bytes = sample();
    expect(Buffer.from(bytes.subarray(0, 8)).toString('latin1')).toBe('JBXBNDL\0');
    const view = new DataView(bytes.buffer);
    expect(view.getUint16(8, true)).toBe(1);
    expect(view.getUint32(12, true)).toBe(3);
    // Part 0 head: kind 1, name length 13, data length 12, then its BLAKE3.
    expect(bytes[16]).toBe(1);
    expect(view.getUint16(18, true)).toBe(13);
    expect(Number(view.getBigUint64(20, true))).toBe(12);
    expect(Buffer.from(bytes.subarray(28, 60))).toEqual(Buffer.from(blake3(enc('{"format":1}'))));
    const end = bytes.length - 40;
    expect(Buffer.from(bytes.subarray(end, end + 8)).toString('latin1')).toBe('JBXBEND\0');
    expect(Buffer.from(bytes.subarray(end + 8))).toEqual(Buffer.from(blake3(bytes.subarray(0, end))));
    const parts = decodeBundle(bytes, 'b.jbxb');
    expect(parts.map((p) => [p.kind, p.name, new TextDecoder().decode(p.data)])).toEqual([
      ['manifest', 'manifest.json', '{"format":1}'],
      ['tape', 't.jbx', 'tape bytes'],
      ['workflowCode', 'workflow-bundle.js', 'var x = 1;'],
    ]);
    expect(looksLikeBundle(bytes)).toBe(true);
  });

  it('tells "not a bundle", "another version", "cut short" and "altered" apart', () => {
    const bytes = sample();
    expect(() => decodeBundle(enc('JBXTAPE\0 a tape, not a bundle'), 'x')).toThrow(BundleMagicError);
    const v2 = bytes.slice();
    v2[8] = 2;
    expect(() => decodeBundle(v2, 'x')).toThrow(BundleVersionError);
    for (const cut of [4, 10, 30, 70, bytes.length - 41, bytes.length - 1])
      expect(() => decodeBundle(bytes.subarray(0, cut), 'x'), `cut at ${cut}`).toThrow(BundleTruncatedError);
    const altered = (at: number) => {
      const b = bytes.slice();
      b[at]! ^= 1;
      return () => decodeBundle(b, 'x');
    };
    expect(altered(60 + 13 + 3)).toThrow(/part 0 fails its BLAKE3 check/); // manifest data
    expect(altered(bytes.length - 50)).toThrow(/part 2 fails its BLAKE3 check/); // code data
    expect(altered(bytes.length - 3)).toThrow(/whole-file BLAKE3/);
    expect(altered(16)).toThrow(BundleCorruptError); // a part kind
    const huge = bytes.slice();
    new DataView(huge.buffer).setBigUint64(20, 2n ** 60n, true);
    expect(() => decodeBundle(huge, 'x')).toThrow(BundleTruncatedError);
    const many = bytes.slice();
    new DataView(many.buffer).setUint32(12, 100_000, true);
    expect(() => decodeBundle(many, 'x')).toThrow(/part count 100000 is outside 1..1024/);
  });
});
