import { createHash } from 'node:crypto';
import { blake2b } from '@noble/hashes/blake2.js';
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { hash as wasmBlake3 } from 'blake3-wasm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blake3, chainNext } from '../../../src/recorder/tape';
import { activeHashers, hashersReady, useFallbackHashers } from '../../../src/recorder/tape/hash';
import vectors from './fixtures/blake3-vectors.json';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const input = (n: number) => Uint8Array.from({ length: n }, (_, i) => i % 251);

const PATHS = [
  { name: 'hash-wasm (small inputs) and blake3-wasm', fallback: false },
  { name: 'the fallbacks: blake3-wasm and node:crypto', fallback: true },
];

/** Runs the enclosing block's tests on one of the two paths, and restores the usual one after. */
function hashWith(fallback: boolean): void {
  let restore = () => {};
  beforeAll(async () => {
    await hashersReady;
    restore = useFallbackHashers(fallback);
  });
  afterAll(() => restore());
}

it('hashes small inputs and chain steps with hash-wasm once it is compiled', async () => {
  await hashersReady;
  expect(activeHashers()).toEqual({ blake3: 'hash-wasm', chain: 'hash-wasm' });
  const restore = useFallbackHashers(true);
  expect(activeHashers()).toEqual({ blake3: 'blake3-wasm', chain: 'node:crypto' });
  restore();
  expect(activeHashers()).toEqual({ blake3: 'hash-wasm', chain: 'hash-wasm' });
});

describe.each(PATHS)('BLAKE3 (content hashes), $name', ({ fallback }) => {
  hashWith(fallback);

  it('matches the official test vectors', () => {
    expect(vectors.cases.map((c) => c.inputLen)).toEqual(
      expect.arrayContaining([0, 1, 1023, 1024, 1025, 31744]),
    );
    for (const c of vectors.cases) {
      const data = input(c.inputLen);
      expect(hex(blake3(data)), `len ${c.inputLen}`).toBe(c.hash.slice(0, 64));
      const extended = wasmBlake3(data, { length: c.hash.length / 2 }) as Buffer;
      expect(extended.toString('hex'), `xof len ${c.inputLen}`).toBe(c.hash);
      expect(hex(nobleBlake3(data)), `noble len ${c.inputLen}`).toBe(c.hash.slice(0, 64));
    }
  });

  it('has the well-known empty-input hash', () => {
    expect(hex(blake3(new Uint8Array(0)))).toBe(
      'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    );
  });

  it('agrees with @noble/hashes on random inputs, including subarray views', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5000 }), fc.nat(16), (bytes, skip) => {
        const view = bytes.subarray(Math.min(skip, bytes.length));
        expect(hex(blake3(view))).toBe(hex(nobleBlake3(view)));
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with @noble/hashes on both sides of the 4 KiB switch between implementations', () => {
    for (const n of [4095, 4096, 4097, 16383, 16384, 16385, 70000]) {
      const data = input(n);
      expect(hex(blake3(data)), `len ${n}`).toBe(hex(nobleBlake3(data)));
    }
  });
});

describe.each(PATHS)('BLAKE2b (chain), $name', ({ fallback }) => {
  hashWith(fallback);

  it('matches the RFC 7693 appendix A "abc" vector for BLAKE2b-512', () => {
    const abc = new TextEncoder().encode('abc');
    const rfc =
      'ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923';
    expect(createHash('blake2b512').update(abc).digest('hex')).toBe(rfc);
    expect(hex(blake2b(abc))).toBe(rfc);
  });

  it('chain step is BLAKE2b-512(prev || fields) truncated to 32 bytes, cross-checked against @noble/hashes', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 52, maxLength: 52 }),
        (prev, f) => {
          const joined = new Uint8Array(84);
          joined.set(prev, 0);
          joined.set(f, 32);
          const got = chainNext(prev, f);
          expect(got.byteLength).toBe(32);
          expect(hex(got)).toBe(hex(blake2b(joined).subarray(0, 32)));
          // Not BLAKE2b-256, which has a different parameter block: the spec says truncated -512.
          expect(hex(got)).not.toBe(hex(blake2b(joined, { dkLen: 32 })));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('chains a previous value and fields of other lengths the same way (the header seed path)', () => {
    const prev = input(32);
    const fields = input(40);
    const joined = new Uint8Array(72);
    joined.set(prev, 0);
    joined.set(fields, 32);
    expect(hex(chainNext(prev, fields))).toBe(hex(blake2b(joined).subarray(0, 32)));
  });
});
