import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { openaiFor, WEATHER_TOOL } from './clients';

const TEXT = 'The weather in Paris is mild, about 18 degrees, with light wind from the west.';

describe('the model server speaks OpenAI Chat Completions to the official client', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: { turns: [{ reply: { text: 'x' } }] } });
  });
  afterAll(() => server.close());
  beforeEach(() =>
    server.loadScript({
      name: 'openai-wire',
      turns: [
        { id: 'text', match: { lastUser: 'weather' }, reply: { text: TEXT, chunkSize: 8, chunkDelayMs: 1 } },
        {
          id: 'tool',
          match: { lastUser: 'use the tool' },
          reply: {
            text: 'Checking.',
            toolCalls: [
              { name: 'get_weather', arguments: { city: 'Paris' } },
              { name: 'get_weather', arguments: { city: 'Lyon', days: [1, 2] } },
            ],
            usage: { input: 12, output: 5 },
            chunkSize: 4,
          },
        },
      ],
    }),
  );
  const user = (content: string) => [{ role: 'user' as const, content }];

  it('streams text as content deltas after a role chunk, then stop and [DONE]', async () => {
    const stream = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('what is the weather?'),
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const pieces = chunks.map((c) => c.choices[0]?.delta.content).filter((p): p is string => !!p);
    expect(pieces.length).toBe(Math.ceil(TEXT.length / 8));
    expect(pieces.join('')).toBe(TEXT);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-4o-mini')).toBe(true);
    // No usage chunk unless stream_options.include_usage asks for one.
    expect(chunks.some((c) => c.usage)).toBe(false);
  });

  it('streams tool calls that the SDK accumulates into a final completion', async () => {
    const stream = openaiFor(server).chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: user('please use the tool'),
      tools: [WEATHER_TOOL],
    });
    const final = await stream.finalChatCompletion();
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Checking.');
    const calls = (choice.message.tool_calls ?? []).map((c) =>
      c.type === 'function' ? { id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) } : c,
    );
    expect(calls).toEqual([
      { id: expect.stringMatching(/^call_/), name: 'get_weather', args: { city: 'Paris' } },
      { id: expect.stringMatching(/^call_/), name: 'get_weather', args: { city: 'Lyon', days: [1, 2] } },
    ]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
  });

  it('sends tool-call arguments in pieces, after a header chunk with id, type and name', async () => {
    const stream = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('use the tool'),
      stream: true,
    });
    const deltas = [];
    for await (const chunk of stream)
      for (const d of chunk.choices[0]?.delta.tool_calls ?? []) deltas.push(d);
    const first = deltas.filter((d) => d.index === 0);
    expect(first[0]).toMatchObject({
      index: 0,
      type: 'function',
      function: { name: 'get_weather', arguments: '' },
    });
    expect(first.length).toBeGreaterThan(2);
    expect(first.map((d) => d.function?.arguments ?? '').join('')).toBe('{"city":"Paris"}');
  });

  it('reports scripted usage in a final choices-less chunk when include_usage is set', async () => {
    const stream = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('use the tool'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
  });

  it('answers without streaming with a full chat.completion, tool calls and usage', async () => {
    const res = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user('use the tool'),
      tools: [WEATHER_TOOL],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]?.finish_reason).toBe('tool_calls');
    const call = res.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    expect(res.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
  });

  it('estimates usage from text length when the script gives none', async () => {
    const prompt = 'what is the weather like today in the city of Paris?';
    const res = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user(prompt),
    });
    expect(res.choices[0]?.message.content).toBe(TEXT);
    expect(res.choices[0]?.finish_reason).toBe('stop');
    expect(res.usage?.prompt_tokens).toBe(Math.ceil(prompt.length / 4));
    expect(res.usage?.completion_tokens).toBe(Math.ceil(TEXT.length / 4));
  });

  it('frames chunks as "data: JSON" lines and ends the stream with data: [DONE]', async () => {
    const res = await fetch(`${server.openaiBaseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: user('the weather?') }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await res.text()).split('\n\n');
    expect(frames.at(-1)).toBe('');
    expect(frames.at(-2)).toBe('data: [DONE]');
    for (const frame of frames.slice(0, -2))
      expect(JSON.parse(frame.replace(/^data: /, '')).object).toBe('chat.completion.chunk');
  });
});
