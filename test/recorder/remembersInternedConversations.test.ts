import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { internRemembered } from '../../src/recorder/internMemo';
import { internMessages, readTape, TapeWriter } from '../../src/recorder/tape';
import { tempDir } from './helpers';

const header = (id: string) => ({
  tapeId: `${id}/1`,
  createdAtMs: 1,
  workflowType: 'agent',
  workflowId: id,
  runId: '1',
  taskQueue: 'q',
  agentCodeHash: 'unknown',
});

function turn(i: number) {
  return [
    {
      role: 'assistant',
      content: `Step ${i}.`,
      toolCalls: [{ id: `c${i}`, name: 'lookup', arguments: { n: i } }],
    },
    { role: 'tool', toolCallId: `c${i}`, name: 'lookup', content: `fact ${i}` },
  ];
}

describe('interning a resent conversation from memory', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const open = async (name: string) => {
    const t = tempDir('jbx-intern-');
    cleanups.push(t.cleanup);
    const file = path.join(t.dir, `${name}.jbx`);
    return { w: await TapeWriter.open(file, header(name), { fsync: 'none' }), file };
  };

  it('gives the head node and the tape bytes interning from scratch gives, step after step', async () => {
    const plain = await open('plain');
    const remembered = await open('remembered');
    const messages: unknown[] = [{ role: 'user', content: 'Go.' }];
    for (let i = 0; i < 6; i++) {
      messages.push(...turn(i));
      const a = await internMessages(plain.w, messages, { step: i });
      // Twice per step, like an llm step's activity input and its request.
      await internRemembered(remembered.w, messages, { step: i });
      const b = await internRemembered(remembered.w, messages, { step: i });
      expect(b?.hash).toBe(a?.hash);
    }
    await plain.w.close();
    await remembered.w.close();
    // The same blobs, none twice: nothing was interned again.
    const blobs = (file: string) =>
      readTape(file)
        .frames.filter((f) => f.kind === 'blob')
        .map((f) => f.payloadHash);
    expect(blobs(remembered.file)).toEqual(blobs(plain.file));
  });

  it('never answers from memory for a message JSON cannot tell apart (bytes from an object)', async () => {
    const { w } = await open('bytes');
    // JSON writes both as {"0":1}; on the tape one is binary, the other a map.
    const asObject = await internRemembered(w, [{ role: 'tool', content: { 0: 1 } }]);
    const asBytes = await internRemembered(w, [{ role: 'tool', content: new Uint8Array([1]) }]);
    const fresh = await open('fresh');
    expect(asBytes?.hash).toBe(
      (await internMessages(fresh.w, [{ role: 'tool', content: new Uint8Array([1]) }]))?.hash,
    );
    expect(asBytes?.hash).not.toBe(asObject?.hash);
    await w.close();
    await fresh.w.close();
  });

  it('forgets what a writer remembered once another writer continues the tape', async () => {
    const { w, file } = await open('reopened');
    const messages = [{ role: 'user', content: 'Go.' }, ...turn(0)];
    const first = await internRemembered(w, messages);
    await w.close();
    const again = await TapeWriter.reopen(file, { fsync: 'none' });
    // The reopened writer knows the blobs from the file and builds the same head without the old memory.
    expect((await internRemembered(again, messages))?.hash).toBe(first?.hash);
    await again.close();
  });
});
