import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { ANTHROPIC_WEATHER_TOOL, anthropicFor } from './clients';

const TEXT = 'The weather in Paris is mild, about 18 degrees, with light wind from the west.';
const MODEL = 'claude-sonnet-4-5';

describe('the model server speaks Anthropic Messages to the official client', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: { turns: [{ reply: { text: 'x' } }] } });
  });
  afterAll(() => server.close());
  beforeEach(() =>
    server.loadScript({
      name: 'anthropic-wire',
      turns: [
        { id: 'text', match: { lastUser: 'weather' }, reply: { text: TEXT, chunkSize: 8, chunkDelayMs: 1 } },
        {
          id: 'tool',
          match: { lastUser: 'use the tool' },
          reply: {
            text: 'Checking.',
            toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris', days: [1, 2] } }],
            usage: { input: 12, output: 5 },
            chunkSize: 4,
          },
        },
      ],
    }),
  );
  const user = (content: string) => [{ role: 'user' as const, content }];

  it('streams text as text_delta events the SDK turns into text callbacks', async () => {
    const stream = anthropicFor(server).messages.stream({
      model: MODEL,
      max_tokens: 256,
      messages: user('what is the weather?'),
    });
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    const final = await stream.finalMessage();
    expect(deltas.length).toBe(Math.ceil(TEXT.length / 8));
    expect(deltas.join('')).toBe(TEXT);
    expect(final.content).toEqual([{ type: 'text', text: TEXT, citations: null }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.model).toBe(MODEL);
  });

  it('frames the stream as the API does: message_start, blocks, message_delta, message_stop', async () => {
    const stream = await anthropicFor(server).messages.create({
      model: MODEL,
      max_tokens: 256,
      messages: user('use the tool'),
      stream: true,
    });
    const events: RawMessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const kinds = events.map((e) => e.type);
    expect(kinds[0]).toBe('message_start');
    expect(kinds.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const starts = events.filter((e) => e.type === 'content_block_start');
    expect(starts.map((e) => [e.index, e.content_block.type])).toEqual([
      [0, 'text'],
      [1, 'tool_use'],
    ]);
    const json = events.flatMap((e) =>
      e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' ? [e.delta.partial_json] : [],
    );
    expect(json.length).toBeGreaterThan(1);
    expect(JSON.parse(json.join(''))).toEqual({ city: 'Paris', days: [1, 2] });
    expect(kinds.filter((k) => k === 'content_block_stop')).toHaveLength(2);
  });

  it('streams a tool_use block that finalMessage() returns with parsed input and usage', async () => {
    const final = await anthropicFor(server)
      .messages.stream({
        model: MODEL,
        max_tokens: 256,
        messages: user('use the tool'),
        tools: [ANTHROPIC_WEATHER_TOOL],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'Checking.' });
    expect(final.content[1]).toMatchObject({
      type: 'tool_use',
      id: expect.stringMatching(/^toolu_/),
      name: 'get_weather',
      input: { city: 'Paris', days: [1, 2] },
    });
    expect(final.usage).toMatchObject({ input_tokens: 12, output_tokens: 5 });
  });

  it('answers without streaming with a full message, tool_use block and usage', async () => {
    const res = await anthropicFor(server).messages.create({
      model: MODEL,
      max_tokens: 256,
      messages: user('use the tool'),
      tools: [ANTHROPIC_WEATHER_TOOL],
    });
    expect(res.type).toBe('message');
    expect(res.role).toBe('assistant');
    expect(res.stop_reason).toBe('tool_use');
    expect(res.content.map((b) => b.type)).toEqual(['text', 'tool_use']);
    const tool = res.content[1];
    expect(tool?.type === 'tool_use' && tool.input).toEqual({ city: 'Paris', days: [1, 2] });
    expect(res.usage).toMatchObject({ input_tokens: 12, output_tokens: 5 });
  });

  it('estimates usage from text length when the script gives none, system prompt included', async () => {
    const system = 'You are terse.';
    const prompt = 'what is the weather like today?';
    const res = await anthropicFor(server).messages.create({
      model: MODEL,
      max_tokens: 256,
      system,
      messages: user(prompt),
    });
    expect(res.usage.input_tokens).toBe(Math.ceil((system.length + prompt.length) / 4));
    expect(res.usage.output_tokens).toBe(Math.ceil(TEXT.length / 4));
  });

  it('frames each event as "event: NAME" plus "data: JSON" and sends a ping, as the live API does', async () => {
    const res = await fetch(`${server.anthropicBaseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 256, stream: true, messages: user('the weather?') }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    for (const frame of frames) {
      const [eventLine, dataLine, ...rest] = frame.split('\n');
      expect(rest).toEqual([]);
      const name = eventLine?.replace(/^event: /, '');
      expect(JSON.parse(dataLine?.replace(/^data: /, '') ?? '').type).toBe(name);
    }
    expect(frames).toContain('event: ping\ndata: {"type":"ping"}');
  });
});
