import { Decoder } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlobRef } from '../../../src/recorder/tape';
import { DEFAULT_LIMITS, type TapeLimits } from '../../../src/recorder/tape/limits';
import { encodePayload, PayloadProblem, scanPayload } from '../../../src/recorder/tape/payload';
import { decodeCheckedPayload } from '../../../src/recorder/tape/payloadDecoder';

// The reference: the scanner that checks limits, then @msgpack/msgpack's own decoder (with the BlobRef
// extension, as the tape registers it), which the reader used before it decoded in one pass.
const reference = new Decoder({
  extensionCodec: (() => {
    const { ExtensionCodec } = require('@msgpack/msgpack') as typeof import('@msgpack/msgpack');
    const c = new ExtensionCodec();
    c.register({ type: 1, encode: () => null, decode: (d: Uint8Array) => new BlobRef(d) });
    return c;
  })(),
  useBigInt64: false,
});

type Outcome =
  | { ok: true; value: unknown; refs: string[] }
  | { ok: false; reason: string; detail: string; limit: string | undefined };

function viaReference(bytes: Uint8Array, limits: TapeLimits): Outcome {
  const refs: string[] = [];
  const problem = scanPayload(bytes, limits, refs);
  if (problem) return { ok: false, reason: problem.reason, detail: problem.detail, limit: problem.limit };
  try {
    return { ok: true, value: reference.decode(bytes), refs };
  } catch (err) {
    return { ok: false, reason: 'payload-decode', detail: (err as Error).message, limit: undefined };
  }
}

function viaDecoder(bytes: Uint8Array, limits: TapeLimits): Outcome {
  const refs: string[] = [];
  const v = decodeCheckedPayload(bytes, limits, refs);
  if (v instanceof PayloadProblem) return { ok: false, reason: v.reason, detail: v.detail, limit: v.limit };
  return { ok: true, value: v, refs };
}

function expectSame(bytes: Uint8Array, limits: TapeLimits): void {
  const want = viaReference(bytes, limits);
  const got = viaDecoder(bytes, limits);
  const hex = Buffer.from(bytes).toString('hex');
  if (!want.ok && want.detail.includes('__proto__')) {
    // @msgpack/msgpack refuses a __proto__ key however its bytes spell it; so does the decoder, in its words.
    expect(got, hex).toEqual({
      ok: false,
      reason: 'payload-decode',
      detail: 'map key __proto__ is not allowed',
      limit: undefined,
    });
    return;
  }
  expect(got, hex).toStrictEqual(want);
}

const blobRef = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => new BlobRef(b));
const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  // Lone surrogates: a stream chunk can end between the two halves of a pair.
  fc.constantFrom('\ud83d', '\ude00x', `${'a'.repeat(250)}\ud83d`, 'é'.repeat(120), '\ufeffBOM'.repeat(50)),
);
const scalar = fc.oneof(
  text,
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true }),
  fc.float(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }).map((n) => Number(n)),
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 300 }),
  blobRef,
);
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, scalar, tie('arr'), tie('obj')),
  arr: fc.array(tie('v'), { maxLength: 20 }),
  // The writer refuses a __proto__ key (its own scan); the next test covers one in the bytes.
  obj: fc.dictionary(
    fc.oneof(fc.string({ maxLength: 20 }), text).filter((k) => k !== '__proto__'),
    tie('v'),
    { maxKeys: 20 },
  ),
})).v;

const TIGHT: TapeLimits = { ...DEFAULT_LIMITS, maxDepth: 3, maxValues: 12, maxStringBytes: 24 };

describe('the one-pass payload decoder', () => {
  it('decodes what the writer encodes exactly as @msgpack/msgpack does, blob references in order', () => {
    fc.assert(
      fc.property(value, (v) => {
        const bytes = encodePayload(v);
        const got = viaDecoder(bytes, DEFAULT_LIMITS);
        expect(got).toStrictEqual(viaReference(bytes, DEFAULT_LIMITS));
        expect(got.ok).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('gives the same value or the same problem as scan-then-decode on arbitrary and mutated bytes', () => {
    const mutated = fc
      .tuple(
        value.map((v) => encodePayload(v)),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.nat(),
      )
      .map(([bytes, edits, cut]) => {
        const b = Uint8Array.from(bytes);
        for (const [at, byte] of edits) if (b.length) b[at % b.length] = byte;
        return cut % 5 === 0 ? b.subarray(0, cut % (b.length + 1)) : b;
      });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), mutated), (bytes) => {
        expectSame(bytes, DEFAULT_LIMITS);
        expectSame(bytes, TIGHT);
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses hostile declared sizes before allocating, with the scanner’s problem', () => {
    const hostile = [
      [0xdd, 0xff, 0xff, 0xff, 0xff], // array32 claiming 4G items
      [0xdf, 0xff, 0xff, 0xff, 0xff], // map32 claiming 4G entries
      [0xdb, 0xff, 0xff, 0xff, 0xff, 0x61], // str32 claiming 4 GiB
      [0xc6, 0xff, 0xff, 0xff, 0xff], // bin32 claiming 4 GiB
      [0xc9, 0xff, 0xff, 0xff, 0xff, 0x01], // ext32
      [0x81, 0xa9, ...Buffer.from('__proto__'), 0xc0], // { __proto__: null }
      [0x81, 0x01, 0xc0], // integer key
    ].map((b) => Uint8Array.from(b));
    for (const b of hostile) expectSame(b, DEFAULT_LIMITS);
    expect(viaDecoder(hostile[0]!, DEFAULT_LIMITS)).toEqual({
      ok: false,
      reason: 'payload-decode',
      detail: 'payload ends inside a value at payload byte 5',
      limit: undefined,
    });
    expect(viaDecoder(hostile[2]!, DEFAULT_LIMITS)).toEqual({
      ok: false,
      reason: 'payload-string',
      detail: `a 4294967295-byte string exceeds ${DEFAULT_LIMITS.maxStringBytes}`,
      limit: 'maxStringBytes',
    });
    const deep = new Uint8Array(200_000).fill(0x91);
    expect(viaDecoder(deep, DEFAULT_LIMITS)).toEqual({
      ok: false,
      reason: 'payload-depth',
      detail: 'nesting deeper than 64',
      limit: 'maxDepth',
    });
    expectSame(deep, DEFAULT_LIMITS);
  });
});
