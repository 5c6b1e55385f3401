import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BlobRef,
  FRAME_KINDS,
  type FrameKind,
  readTape,
  type TapeHeader,
} from '../../../src/recorder/tape';
import { encodeHeader, parseHeader } from '../../../src/recorder/tape/header';
import { DEFAULT_LIMITS } from '../../../src/recorder/tape/limits';
import { decodePayload, encodePayload, scanPayload } from '../../../src/recorder/tape/payload';
import { fakeClock, HEADER, makeTape } from './helpers';

const APPENDABLE = FRAME_KINDS.filter((k) => !['blob', 'seal', 'outcome'].includes(k)) as FrameKind[];
const ACTIVITY = new Set<string>(['activity.start', 'activity.complete', 'activity.error']);

// Values MessagePack round-trips exactly: no undefined, no -0 (encoded as integer 0), no NaN, no __proto__ keys.
const key = fc.string({ maxLength: 12 }).map((s) => `k${s}`);
const scalar = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true }).filter((d) => !Object.is(d, -0)),
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 64 }),
);
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('arr'), tie('obj')),
  arr: fc.array(tie('v'), { maxLength: 5 }),
  obj: fc.dictionary(key, tie('v'), { maxKeys: 5 }),
})).v;
const payloadMap = fc.dictionary(key, value, { maxKeys: 6 });

const str = fc.string({ unit: 'grapheme', maxLength: 30 });
const header: fc.Arbitrary<TapeHeader> = fc
  .record({
    tapeId: str.map((s) => `t${s}`),
    createdAtMs: fc.maxSafeNat(),
    workflowType: str,
    workflowId: str,
    runId: str,
    taskQueue: str,
    agentCodeHash: str,
    parent: fc.option(
      fc.record({
        tapeId: str,
        tapeHash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex')),
        forkStep: fc.nat({ max: 0xffffffff }),
      }),
      { nil: undefined },
    ),
    meta: fc.option(payloadMap, { nil: undefined }),
  })
  .map((h) => {
    const out: TapeHeader = { ...h };
    if (out.parent === undefined) delete out.parent;
    if (out.meta === undefined) delete out.meta;
    return out;
  });

describe('round trips', () => {
  it('payload codec: encode → scan → decode is the identity', () => {
    fc.assert(
      fc.property(value, (v) => {
        const bytes = encodePayload(v);
        expect(scanPayload(bytes, DEFAULT_LIMITS)).toBeUndefined();
        expect(decodePayload(bytes)).toEqual(v);
      }),
      { numRuns: 2000 },
    );
  });

  it('header: encode → parse is the identity', () => {
    fc.assert(
      fc.property(header, (h) => {
        const { bytes, checksum } = encodeHeader(h);
        const parsed = parseHeader((o, l) => bytes.subarray(o, o + l), '<bytes>', DEFAULT_LIMITS);
        expect(parsed.header).toEqual(h);
        expect(parsed.checksum).toEqual(checksum);
        expect(parsed.end).toBe(bytes.byteLength);
      }),
      { numRuns: 1000 },
    );
  });

  const frameSpec = fc.record({
    kind: fc.constantFrom(...APPENDABLE),
    step: fc.nat({ max: 0xffffffff }),
    payload: payloadMap,
    identity: fc.record({
      workflowId: fc.option(str, { nil: undefined }),
      runId: fc.option(str, { nil: undefined }),
      activityId: str,
      attempt: fc.integer({ min: 1, max: 0xffffffff }),
    }),
    recordedAtUs: fc.maxSafeNat(),
    blobs: fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 3 }),
  });

  it('tape: header, frames, blobs and refs read back exactly as written', async () => {
    await fc.assert(
      fc.asyncProperty(
        header,
        fc.array(frameSpec, { maxLength: 8 }),
        fc.boolean(),
        async (h, specs, seal) => {
          const expected: Array<{ kind: string; step: number; recordedAtUs: number; payload: unknown }> = [];
          const allBlobs = new Map<string, Uint8Array>();
          const bytes = await makeTape(
            async (w) => {
              for (const s of specs) {
                const refs: BlobRef[] = [];
                for (const b of s.blobs) {
                  const ref = await w.putBlob(b, { step: s.step });
                  refs.push(ref);
                  if (!allBlobs.has(ref.hash)) {
                    allBlobs.set(ref.hash, b);
                    expected.push({ kind: 'blob', step: s.step, recordedAtUs: -1, payload: b });
                  }
                }
                const id = ACTIVITY.has(s.kind)
                  ? { activityId: s.identity.activityId, attempt: s.identity.attempt }
                  : Object.fromEntries(Object.entries(s.identity).filter(([, v]) => v !== undefined));
                const payload = { ...s.payload, ...id, refs };
                await w.append({ kind: s.kind, step: s.step, payload, recordedAtUs: s.recordedAtUs });
                expected.push({ kind: s.kind, step: s.step, recordedAtUs: s.recordedAtUs, payload });
              }
              if (seal) await w.seal({ status: 'completed' }, { step: 3 });
            },
            h,
            { fsync: 'none', nowUs: fakeClock },
          );
          const t = readTape(bytes);
          expect(t.header).toEqual(h);
          expect(t.sealed).toBe(seal);
          expect(t.tornTail).toBeNull();
          const body = seal ? t.frames.slice(0, -2) : t.frames;
          expect(body.map((f) => f.kind)).toEqual(expected.map((e) => e.kind));
          for (const [i, f] of body.entries()) {
            const e = expected[i]!;
            expect(f.index).toBe(i);
            expect(f.step).toBe(e.step);
            if (e.recordedAtUs >= 0) expect(f.recordedAtUs).toBe(e.recordedAtUs);
            expect(f.payload).toEqual(e.payload);
          }
          expect(new Map([...t.blobs].map(([k, b]) => [k, b.bytes]))).toEqual(allBlobs);
          if (seal) {
            expect(t.outcome).toEqual({ status: 'completed' });
            expect(t.seal).toMatchObject({ frameCount: t.frames.length - 1, blobCount: allBlobs.size });
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('HEADER fixture reads back', async () => {
    const t = readTape(await makeTape(async () => {}));
    expect(t.header).toEqual(HEADER);
    expect(t.frames).toEqual([]);
  });
});
