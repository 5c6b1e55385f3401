/**
 * firstChunkDelayMs plays a model that thinks before its first token: the official clients see the response
 * start (streamed) and then nothing until the pause is over. Lower bounds only: a loaded machine is slower, never
 * faster.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { anthropicFor, openaiFor } from './clients';

const PAUSE_MS = 1_500;

describe('a scripted pause before the first chunk', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({
      script: {
        turns: [
          {
            match: { lastUser: 'think' },
            reply: { text: 'Thought it over.', firstChunkDelayMs: PAUSE_MS },
            repeat: true,
          },
          {
            match: { lastUser: 'refuse' },
            reply: { status: 529, text: 'Overloaded.', firstChunkDelayMs: PAUSE_MS },
          },
        ],
      },
    });
  });
  afterAll(() => server.close());
  const user = (content: string) => [{ role: 'user' as const, content }];

  it('streams the response headers at once, then the first chunk after the pause (OpenAI)', async () => {
    const start = performance.now();
    const stream = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('think first'),
      stream: true,
    });
    const responded = performance.now() - start;
    let first: number | undefined;
    let text = '';
    for await (const chunk of stream) {
      first ??= performance.now() - start;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('Thought it over.');
    expect(first).toBeGreaterThanOrEqual(PAUSE_MS);
    // The response started before the pause: the client spent it waiting on an open stream (the margin leaves
    // a loaded machine room to hand over the headers late).
    expect(first! - responded).toBeGreaterThanOrEqual(PAUSE_MS / 2);
  });

  it('pauses before the first event of an Anthropic stream and before an unstreamed answer', async () => {
    const start = performance.now();
    const stream = anthropicFor(server).messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      messages: user('think first'),
    });
    let first: number | undefined;
    stream.on('streamEvent', () => {
      first ??= performance.now() - start;
    });
    expect(await stream.finalText()).toBe('Thought it over.');
    expect(first).toBeGreaterThanOrEqual(PAUSE_MS);

    const unstreamedStart = performance.now();
    const completion = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('think first'),
    });
    expect(completion.choices[0]?.message.content).toBe('Thought it over.');
    expect(performance.now() - unstreamedStart).toBeGreaterThanOrEqual(PAUSE_MS);
  });

  it('pauses before a scripted error too', async () => {
    const start = performance.now();
    await expect(
      openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user('refuse') }),
    ).rejects.toMatchObject({ status: 529 });
    expect(performance.now() - start).toBeGreaterThanOrEqual(PAUSE_MS);
  });

  it('ends a pause whose client went away, and does not hold close() open for one', async () => {
    const other = await startModelServer({
      script: { turns: [{ reply: { text: 'never sent', firstChunkDelayMs: 600_000 }, repeat: true }] },
    });
    const pausing = async () =>
      ((await (await fetch(`${other.url}/_jukebox/stats`)).json()) as { pausing: number }).pausing;
    const untilPausing = async (n: number) => {
      for (let i = 0; i < 1_000 && (await pausing()) !== n; i++) await new Promise((r) => setTimeout(r, 20));
      return pausing();
    };
    const ask = (signal?: AbortSignal) =>
      openaiFor(other)
        .chat.completions.create({ model: 'gpt-4o-mini', messages: user('hi'), stream: true }, { signal })
        .then(async (stream) => {
          for await (const _ of stream) return 'a chunk arrived';
          return 'the stream ended';
        })
        .catch((err: unknown) => err);

    const leaving = new AbortController();
    const left = ask(leaving.signal);
    expect(await untilPausing(1)).toBe(1);
    leaving.abort();
    expect(await left).not.toBe('a chunk arrived');
    // The server noticed: the ten-minute pause is over.
    expect(await untilPausing(0)).toBe(0);

    const stayed = ask();
    expect(await untilPausing(1)).toBe(1);
    await other.close();
    // The client sees its connection end without an answer.
    expect(await stayed).not.toBe('a chunk arrived');
  });
});
