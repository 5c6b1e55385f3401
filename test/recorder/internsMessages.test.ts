import { statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/llm/types';
import { readTape, resolveMessages } from '../../src/recorder/tape';
import { RUN, recorder, recordLlmStep, response, tempDir } from './helpers';

describe('a growing conversation is stored once', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('stores each message as one blob however many requests resend it', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const rec = recorder(t.dir);
    const long = 'x'.repeat(2_000);
    const messages: ChatMessage[] = [{ role: 'user', content: `question ${long}` }];
    const tools = [{ name: 'lookup', parameters: { type: 'object' } }];
    const turns = 10;
    for (let turn = 0; turn < turns; turn++) {
      const reply = response(`answer ${turn} ${long}`);
      await recordLlmStep(
        rec,
        turn,
        { provider: 'openai', model: 'gpt-4o-mini', messages: [...messages], tools },
        reply,
      );
      // The tool loop appends the assistant message in exactly the shape the recorder stored it.
      messages.push({ role: 'assistant', content: reply.text, toolCalls: reply.toolCalls });
      messages.push({ role: 'user', content: `follow-up ${turn}` });
    }
    await rec.close();
    const file = rec.store.pathFor(RUN.workflowId, RUN.runId);
    const tape = readTape(file);

    const requests = tape.frames.filter((f) => f.kind === 'llm.request');
    expect(requests).toHaveLength(turns);
    const last = requests.at(-1)!.payload as { messages: never[] };
    expect(resolveMessages(tape, last.messages)).toEqual(messages.slice(0, -2));

    // Every distinct message, and the tool list, is one blob; a resend costs a 35-byte reference.
    const distinctLong = 1 + turns; // the question plus each long answer
    const longBlobs = [...tape.blobs.values()].filter((b) => b.bytes.byteLength > 2_000);
    expect(longBlobs.filter((b) => b.encoding === 'msgpack')).toHaveLength(distinctLong);
    // And each streamed answer's text once more, as its chunk batch's raw text blob (FORMAT.md note 2).
    expect(longBlobs.filter((b) => b.encoding === 'raw')).toHaveLength(turns);
    const toolBlobs = tape.frames
      .filter((f) => f.kind === 'llm.request')
      .map((f) => (f.payload as { tools: { hash: string } }).tools.hash);
    expect(new Set(toolBlobs).size).toBe(1);
    // Linear: each long text once as a message and once as streamed chunks, plus ~2 KB of frames per step.
    // Re-storing the history each turn would cost 55 long messages (110 KB) on top of the chunks.
    const linear = (distinctLong + turns) * 2_100 + turns * 2_500;
    expect(statSync(file).size).toBeLessThan(linear);
  });
});
