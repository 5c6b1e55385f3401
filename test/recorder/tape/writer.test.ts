import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type BlobRef,
  internMessages,
  readTape,
  resolveMessages,
  TapeCorruptError,
  TapeSealedError,
  TapeUsageError,
  TapeWriter,
  verifyTape,
} from '../../../src/recorder/tape';
import { encodePayload } from '../../../src/recorder/tape/payload';
import { fakeClock, HEADER, tempDir } from './helpers';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

const opts = { fsync: 'none' as const, nowUs: fakeClock };

describe('TapeWriter', () => {
  it('stores the same blob once, however often it is put', async () => {
    const p = t.path('a.jbx');
    const w = await TapeWriter.open(p, HEADER, opts);
    const bytes = new TextEncoder().encode('x'.repeat(10_000));
    const [a, b] = await Promise.all([w.putBlob(bytes), w.putBlob(bytes)]);
    const c = await w.putBlob(bytes.slice());
    expect(a.hash).toBe(b.hash);
    expect(c.hash).toBe(a.hash);
    expect(w.blobCount).toBe(1);
    await w.close();
    const tape = readTape(p);
    expect(tape.frames.filter((f) => f.kind === 'blob')).toHaveLength(1);
    expect(statSync(p).size).toBeLessThan(10_000 + 1000);
  });

  it('reports for each append the place and hashes the reader verifies, whatever was encoded after it', async () => {
    const p = t.path('reported.jbx');
    const w = await TapeWriter.open(p, HEADER, opts);
    // A big payload after a small one: the encoder's buffer they share grows and is overwritten in between.
    const small = await w.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    const blob = await w.putValue({ text: 'b'.repeat(70_000) }, { step: 0 });
    const big = await w.append({ kind: 'tool.result', step: 1, payload: { callId: 'c', output: blob } });
    await w.close();
    const frames = readTape(p).frames;
    const [first, , last] = frames;
    expect(first!.payload).toEqual({ nowMs: 1 });
    expect(last!.payload).toEqual({ callId: 'c', output: blob });
    expect(JSON.parse(JSON.stringify(small))).toEqual({
      index: 0,
      offset: first!.offset,
      length: first!.length,
      payloadHash: first!.payloadHash,
      chain: first!.chain,
    });
    expect([big.index, big.offset, big.length, big.payloadHash, big.chain]).toEqual([
      2,
      last!.offset,
      last!.length,
      last!.payloadHash,
      last!.chain,
    ]);
    expect(frames[1]!.blobKey).toBe(blob.hash);
  });

  it('a growing 50-step conversation stores O(new content) bytes', async () => {
    const p = t.path('conv.jbx');
    const w = await TapeWriter.open(p, HEADER, opts);
    const history: unknown[] = [];
    let newContent = 0;
    for (let step = 0; step < 50; step++) {
      const user = { role: 'user', content: `question ${step}: ${'q'.repeat(1000)}` };
      const reply = { role: 'assistant', content: `answer ${step}: ${'a'.repeat(1000)}` };
      history.push(user);
      newContent += encodePayload(user).byteLength + encodePayload(reply).byteLength;
      const head = await internMessages(w, history, { step });
      await w.append({ kind: 'llm.request', step, payload: { model: 'm', messages: head } });
      await w.append({ kind: 'llm.response', step, payload: { message: await w.putValue(reply, { step }) } });
      history.push(reply);
    }
    await w.close();
    const size = statSync(p).size;
    const naive = 50 * 51 * 1020; // every request re-storing its whole history
    // Content once, plus per message one chain node (a blob frame of ~160 bytes), plus fixed per-frame overhead:
    // linear in the messages, where resending references would grow with the square of the steps.
    const perMessage = 84 + 2 + 2 * 36 + 84;
    expect(size).toBeLessThan(newContent + 100 * perMessage + 100 * 200 + 1000);
    expect(size).toBeLessThan(naive / 10);
    const tape = readTape(p);
    const last = tape.frames.filter((f) => f.kind === 'llm.request').at(-1)!;
    const msgs = resolveMessages(tape, (last.payload as { messages: BlobRef }).messages);
    expect(msgs).toHaveLength(99);
    expect(msgs[98]).toEqual(history[98]);
  });

  it('reopen-and-append continues the chain, and the result verifies', async () => {
    const p = t.path('r.jbx');
    const w1 = await TapeWriter.open(p, HEADER, opts);
    const blob = await w1.putBlob(Uint8Array.from([1, 2, 3]));
    await w1.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    const chain1 = w1.chain;
    await w1.close();

    const w2 = await TapeWriter.open(p, HEADER, opts);
    expect(w2.recoveredTornTail).toBeNull();
    expect(w2.chain).toBe(chain1);
    expect(w2.frameCount).toBe(2);
    expect(w2.hasBlob(blob.hash)).toBe(true);
    await w2.putBlob(Uint8Array.from([1, 2, 3])); // still deduped across reopen
    await w2.append({ kind: 'tool.result', step: 1, payload: { output: blob } });
    await w2.seal({ status: 'completed' });
    await w2.close();

    const tape = readTape(p);
    expect(tape.frames.map((f) => f.kind)).toEqual(['blob', 'clock', 'tool.result', 'outcome', 'seal']);
    expect(tape.frames[1]!.chain).toBe(chain1);
    expect(tape.sealed).toBe(true);
    expect(verifyTape(p)).toMatchObject({ ok: true, sealed: true, frames: 5 });
    await expect(TapeWriter.reopen(p)).rejects.toThrow(TapeSealedError);
  });

  it('resume continues a closed writer from its state without reading the tape, and the result verifies', async () => {
    const p = t.path('resumed.jbx');
    const w1 = await TapeWriter.open(p, HEADER, opts);
    const blob = await w1.putBlob(Uint8Array.from([4, 5, 6]));
    await w1.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    expect(w1.state()).toBeUndefined(); // still open: frames may follow
    await w1.close();
    const state = w1.state()!;
    expect(state).toMatchObject({ offset: w1.byteLength, frames: 2, maxStep: 0 });

    const w2 = await TapeWriter.resume(p, state, opts);
    expect(w2.chain).toBe(w1.chain);
    expect(w2.hasBlob(blob.hash)).toBe(true);
    await w2.putBlob(Uint8Array.from([4, 5, 6])); // still deduped
    await w2.append({ kind: 'tool.result', step: 1, payload: { output: blob } });
    await w2.seal({ status: 'completed' });
    await w2.close();
    expect(w2.state()).toBeUndefined(); // sealed: nothing to resume
    expect(verifyTape(p)).toMatchObject({ ok: true, sealed: true, frames: 5 });
    expect(readTape(p).frames.map((f) => f.kind)).toEqual([
      'blob',
      'clock',
      'tool.result',
      'outcome',
      'seal',
    ]);
  });

  it('resume reads and verifies the tape when the file changed since the state was taken', async () => {
    const p = t.path('moved.jbx');
    const w1 = await TapeWriter.open(p, HEADER, opts);
    await w1.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    await w1.close();
    const stale = w1.state()!;
    // Someone else continued the tape meanwhile.
    const other = await TapeWriter.reopen(p, opts);
    await other.append({ kind: 'clock', step: 1, payload: { nowMs: 2 } });
    await other.close();

    const w2 = await TapeWriter.resume(p, stale, opts);
    expect(w2.frameCount).toBe(2);
    expect(w2.chain).toBe(other.chain);
    await w2.append({ kind: 'clock', step: 2, payload: { nowMs: 3 } });
    await w2.close();
    expect(verifyTape(p)).toMatchObject({ ok: true, frames: 3 });
  });

  it('reopen truncates a torn tail first, then appends', async () => {
    const p = t.path('torn.jbx');
    const w1 = await TapeWriter.open(p, HEADER, opts);
    await w1.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    const good = w1.byteLength;
    await w1.append({ kind: 'clock', step: 1, payload: { nowMs: 2, pad: 'p'.repeat(100) } });
    await w1.close();
    const full = readFileSync(p);
    writeFileSync(p, full.subarray(0, full.length - 30)); // crash mid-frame
    expect(readTape(p).tornTail).toEqual({ offset: good, bytesDropped: full.length - 30 - good });

    const w2 = await TapeWriter.reopen(p, opts);
    expect(w2.recoveredTornTail).toEqual({ offset: good, bytesDropped: full.length - 30 - good });
    expect(statSync(p).size).toBe(good);
    await w2.append({ kind: 'clock', step: 1, payload: { nowMs: 3 } });
    await w2.close();
    const tape = readTape(p);
    expect(tape.tornTail).toBeNull();
    expect(tape.frames.map((f) => (f.payload as { nowMs: number }).nowMs)).toEqual([1, 3]);
  });

  it('reopen refuses a corrupt tape and leaves its bytes alone', async () => {
    const p = t.path('bad.jbx');
    const w = await TapeWriter.open(p, HEADER, opts);
    await w.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    await w.close();
    const bytes = readFileSync(p);
    bytes[bytes.length - 2]! ^= 0xff;
    writeFileSync(p, bytes);
    await expect(TapeWriter.reopen(p)).rejects.toThrow(TapeCorruptError);
    expect(readFileSync(p).equals(bytes)).toBe(true);
  });

  it('open() on an existing tape with another tapeId refuses', async () => {
    const p = t.path('x.jbx');
    await (await TapeWriter.open(p, HEADER, opts)).close();
    await expect(TapeWriter.open(p, { ...HEADER, tapeId: 'other' }, opts)).rejects.toThrow(TapeUsageError);
  });

  it('rejects what the format forbids, writing nothing', async () => {
    const p = t.path('u.jbx');
    const w = await TapeWriter.open(p, HEADER, opts);
    const before = w.byteLength;
    await expect(w.append({ kind: 'blob', step: 0, payload: {} })).rejects.toThrow(TapeUsageError);
    await expect(w.append({ kind: 'seal', step: 0, payload: {} })).rejects.toThrow(TapeUsageError);
    await expect(w.append({ kind: 'clock', step: -1, payload: {} })).rejects.toThrow(TapeUsageError);
    await expect(w.append({ kind: 'clock', step: 0, payload: { at: new Date() } })).rejects.toThrow(
      TapeUsageError,
    );
    await expect(w.append({ kind: 'clock', step: 0, payload: [1, 2] })).rejects.toThrow(TapeUsageError);
    await expect(w.append({ kind: 'activity.start', step: 0, payload: { activityId: 'a' } })).rejects.toThrow(
      /attempt/,
    );
    await expect(
      w.append({
        kind: 'tool.result',
        step: 0,
        payload: { out: (await import('../../../src/recorder/tape')).blobRef('00'.repeat(32)) },
      }),
    ).rejects.toThrow(/putBlob it first/);
    expect(w.byteLength).toBe(before);
    await w.seal({ status: 'failed', error: { message: 'boom' } });
    await expect(w.append({ kind: 'clock', step: 0, payload: {} })).rejects.toThrow(/sealed/);
    await w.close();
    expect(readTape(p).frames.map((f) => f.kind)).toEqual(['outcome', 'seal']);
  });

  it('keeps order when appends are not awaited, under every fsync policy', async () => {
    for (const fsync of ['none', 'step', 'every-frame'] as const) {
      const p = t.path(`o-${fsync}.jbx`);
      const w = await TapeWriter.open(p, HEADER, { fsync });
      const pending = Array.from({ length: 20 }, (_, i) =>
        w.append({ kind: i % 2 ? 'tool.result' : 'tool.call', step: i, payload: { i } }),
      );
      const infos = await Promise.all(pending);
      expect(infos.map((x) => x.index)).toEqual([...Array(20).keys()]);
      await w.close();
      expect(readTape(p).frames.map((f) => (f.payload as { i: number }).i)).toEqual([...Array(20).keys()]);
    }
  });

  it('records a fork parent in the header', async () => {
    const p = t.path('f.jbx');
    const parent = { tapeId: 'tape-0', tapeHash: 'cd'.repeat(32), forkStep: 7 };
    await (await TapeWriter.open(p, { ...HEADER, parent }, opts)).close();
    expect(readTape(p).header.parent).toEqual(parent);
  });

  it('a file appended to by something else is caught on the next read', async () => {
    const p = t.path('g.jbx');
    const w = await TapeWriter.open(p, HEADER, opts);
    await w.append({ kind: 'clock', step: 0, payload: { nowMs: 1 } });
    await w.close();
    appendFileSync(p, Buffer.alloc(100, 7));
    expect(verifyTape(p)).toMatchObject({
      ok: false,
      firstBadFrame: 1,
      recoverableFrames: 1,
      code: 'TAPE_CORRUPT',
    });
  });
});
