import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FRAME_KINDS,
  kindCode,
  readTape,
  TapeError,
  TapeLimitError,
  verifyTape,
} from '../../../src/recorder/tape';
import { encodeFrame } from '../../../src/recorder/tape/frame';
import { encodeHeader, FORMAT_VERSION, type FormatVersion } from '../../../src/recorder/tape/header';
import { HEADER, sampleTape } from './helpers';

/** Reading must end in a result or a TapeError: never another exception, a hang, or a memory blow-up. */
function readOrTypedError(bytes: Uint8Array, stats: { ok: number; typed: number; maxMs: number }): void {
  const t0 = performance.now();
  try {
    readTape(bytes, { limits: { maxFrameBytes: 1 << 20 } });
    stats.ok++;
  } catch (err) {
    if (!(err instanceof TapeError))
      throw new Error(`untyped error on fuzz input: ${String(err)}`, { cause: err });
    expect(err.message).toMatch(/^tape <bytes>: (header|frame \d+) at byte \d+: /);
    stats.typed++;
  }
  try {
    verifyTape(bytes, { limits: { maxFrameBytes: 1 << 20 } });
  } catch (err) {
    throw new Error(`verifyTape threw on fuzz input: ${String(err)}`, { cause: err });
  }
  stats.maxMs = Math.max(stats.maxMs, performance.now() - t0);
}

/** Frames with correct hashes and chain around hostile payloads: the attacker controls everything. */
function forge(
  frames: Array<{ kind: number; encoding: number; payload: Uint8Array; step?: number }>,
  version: FormatVersion = FORMAT_VERSION,
): Uint8Array {
  const { bytes: head, checksum } = encodeHeader(HEADER, version);
  let chain = checksum;
  const parts: Uint8Array[] = [head];
  for (const f of frames) {
    const e = encodeFrame(
      chain,
      { kind: f.kind, encoding: f.encoding, step: f.step ?? 0, recordedAtUs: 1 },
      f.payload,
      version,
    );
    chain = e.chain;
    parts.push(e.bytes);
  }
  return Buffer.concat(parts);
}

const hostilePayloads: Uint8Array[] = [
  Uint8Array.from([0xdd, 0xff, 0xff, 0xff, 0xff]), // array32 claiming 4G items
  Uint8Array.from([0xdf, 0xff, 0xff, 0xff, 0xff]), // map32 claiming 4G entries
  Uint8Array.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]), // str32 claiming 4 GiB
  Uint8Array.from([0xc6, 0xff, 0xff, 0xff, 0xff]), // bin32 claiming 4 GiB
  Uint8Array.from([0xc9, 0xff, 0xff, 0xff, 0xff, 0x01]), // ext32
  new Uint8Array(200_000).fill(0x91), // 200k nested one-element arrays
  Buffer.concat([Buffer.from([0xdc, 0xff, 0xff]), Buffer.alloc(65535, 0xc0)]), // 64k nils: fine
  Uint8Array.from([0x81, 0x01, 0x02]), // non-string key
  Uint8Array.from([0x81, 0xa9, ...Buffer.from('__proto__'), 0x80]),
  Uint8Array.from([0xd6, 0xff, 0, 0, 0, 0]), // timestamp ext
  Uint8Array.from([0xc7, 0x20, 0x01, ...new Uint8Array(32)]), // dangling blob ref
  Uint8Array.from([0xc1]),
  Uint8Array.from([0x80, 0x80]), // trailing value
  new Uint8Array(0),
];

describe('fuzz: only typed errors', () => {
  it('7,000 mutated tapes (11,000+ fuzz inputs with the next test)', async () => {
    const sealed = await sampleTape(true);
    const other = await sampleTape(false);
    const stats = { ok: 0, typed: 0, maxMs: 0 };
    const heap0 = process.memoryUsage().heapUsed;
    let maxHeap = heap0;
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant('set' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
            fc.record({
              op: fc.constant('u32' as const),
              at: fc.nat(),
              v: fc.constantFrom(0, 83, 84, 0x7fffffff, 0xffffffff),
            }),
            fc.record({
              op: fc.constant('ins' as const),
              at: fc.nat(),
              bytes: fc.uint8Array({ maxLength: 40 }),
            }),
            fc.record({ op: fc.constant('del' as const), at: fc.nat(), n: fc.nat(100) }),
            fc.record({ op: fc.constant('cut' as const), at: fc.nat() }),
            fc.record({ op: fc.constant('splice' as const), at: fc.nat(), from: fc.nat(), n: fc.nat(300) }),
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.boolean(),
        (ops, useSealed) => {
          let b = Buffer.from(useSealed ? sealed : other);
          for (const o of ops) {
            const at = b.length ? o.at % b.length : 0;
            if (o.op === 'set') b[at] = o.v;
            else if (o.op === 'u32' && at + 4 <= b.length) b.writeUInt32LE(o.v, at);
            else if (o.op === 'ins') b = Buffer.concat([b.subarray(0, at), o.bytes, b.subarray(at)]);
            else if (o.op === 'del') b = Buffer.concat([b.subarray(0, at), b.subarray(at + o.n)]);
            else if (o.op === 'cut') b = b.subarray(0, at);
            else if (o.op === 'splice') {
              const from = o.from % other.length;
              b = Buffer.concat([b.subarray(0, at), other.subarray(from, from + o.n), b.subarray(at)]);
            }
          }
          readOrTypedError(new Uint8Array(b), stats);
          maxHeap = Math.max(maxHeap, process.memoryUsage().heapUsed);
        },
      ),
      { numRuns: 7000, seed: 42 },
    );
    expect(stats.ok + stats.typed).toBe(7000);
    expect(stats.typed).toBeGreaterThan(5000);
    expect(stats.maxMs).toBeLessThan(1000);
    expect(maxHeap - heap0).toBeLessThan(256 * 1024 * 1024);
  });

  it('frames with valid hashes and chain around arbitrary and hostile payloads', () => {
    const stats = { ok: 0, typed: 0, maxMs: 0 };
    for (const version of [2, 3] as const) {
      for (const payload of hostilePayloads) {
        for (const kind of [kindCode('tool.call'), kindCode('blob'), kindCode('seal'), 200]) {
          readOrTypedError(forge([{ kind, encoding: 1, payload }], version), stats);
        }
      }
      const nested = forge(
        [{ kind: kindCode('tool.call'), encoding: 1, payload: hostilePayloads[5]! }],
        version,
      );
      expect(() => readTape(nested)).toThrow(TapeLimitError);
      // A length field past maxFrameBytes is refused before anything is allocated for it.
      const big = forge([{ kind: kindCode('blob'), encoding: 0, payload: new Uint8Array(2 << 20) }], version);
      expect(() => readTape(big, { limits: { maxFrameBytes: 1 << 20 } })).toThrow(TapeLimitError);
    }

    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            kind: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(...FRAME_KINDS.map(kindCode))),
            encoding: fc.integer({ min: 0, max: 3 }),
            payload: fc.oneof(
              fc.uint8Array({ maxLength: 200 }),
              fc.constantFrom(...hostilePayloads),
              // Structurally plausible MessagePack prefixes followed by noise.
              fc
                .tuple(
                  fc.constantFrom(0x81, 0x82, 0x93, 0xde, 0xdc, 0xc7, 0xd9),
                  fc.uint8Array({ maxLength: 60 }),
                )
                .map(([h, rest]) => Uint8Array.from([h, ...rest])),
            ),
            step: fc.nat(),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        (frames) => readOrTypedError(forge(frames), stats),
      ),
      { numRuns: 4000, seed: 7 },
    );
    expect(stats.maxMs).toBeLessThan(1000);
  });
});
