import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionTape, wrapAnthropic, wrapOpenAI } from '../../src/integrations';
import { chunkEntries, readTape, resolveMessages, verifyTape } from '../../src/recorder/tape';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';

const SCRIPT = {
  name: 'wrapped-clients',
  turns: [
    { id: 'plain', match: { lastUser: 'plain' }, reply: { text: 'A plain answer, not streamed.' } },
    {
      id: 'streamed',
      match: { lastUser: 'stream' },
      reply: { text: 'Streamed in many small pieces of text.', chunkSize: 5 },
    },
    {
      id: 'tools',
      match: { lastUser: 'weather' },
      reply: {
        text: 'Checking.',
        toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
        chunkSize: 3,
      },
    },
  ],
};

const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

async function openaiCalls(client: OpenAI) {
  const plain = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'a plain question' }],
  });
  const chunks: unknown[] = [];
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'please stream' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const c of stream) chunks.push(c);
  const toolChunks: unknown[] = [];
  const toolStream = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'what is the weather?' }],
    tools: [WEATHER],
    stream: true,
  });
  for await (const c of toolStream) toolChunks.push(c);
  return { plain, chunks, toolChunks };
}

async function anthropicCalls(client: Anthropic) {
  const plain = await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'a plain question' }],
  });
  const events: unknown[] = [];
  const stream = await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'what is the weather?' }],
    tools: [
      { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ],
    stream: true,
  });
  for await (const e of stream) events.push(e);
  return { plain, events };
}

describe('wrapped openai and anthropic clients record onto a tape and replay from it', () => {
  let server: ModelServer;
  let dir: string;
  beforeAll(async () => {
    server = await startModelServer({ script: SCRIPT });
    dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-wrap-'));
  });
  afterAll(() => server.close());

  it('replays an openai client (plain, streamed, tool calls) with the same results and no network', async () => {
    const tape = new SessionTape({ dir, session: 'openai-wrap' });
    const live = wrapOpenAI(new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test', maxRetries: 0 }), {
      sink: () => tape.begin(),
    });
    const recorded = await openaiCalls(live);
    await tape.close();
    expect(server.requestCount()).toBe(3);
    expect(verifyTape(tape.path).ok).toBe(true);

    // A base URL where nothing listens: any request that reached the network would fail.
    const offline = new OpenAI({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'sk-test', maxRetries: 0 });
    const replayed = await openaiCalls(wrapOpenAI(offline, { replay: tape.path }));
    expect(replayed).toEqual(recorded);
    expect(server.requestCount()).toBe(3);
    const toolCall = (recorded.toolChunks as { choices: { delta: { tool_calls?: unknown[] } }[] }[]).find(
      (c) => c.choices[0]?.delta.tool_calls,
    );
    expect(toolCall).toBeDefined();
  });

  it('replays an anthropic client, streamed tool use included', async () => {
    server.loadScript(SCRIPT);
    const tape = new SessionTape({ dir, session: 'anthropic-wrap' });
    const live = wrapAnthropic(
      new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'sk-ant-test', maxRetries: 0 }),
      { sink: () => tape.begin() },
    );
    const recorded = await anthropicCalls(live);
    await tape.close();
    const offline = new Anthropic({ baseURL: 'http://127.0.0.1:9', apiKey: 'sk-ant-test', maxRetries: 0 });
    const replayed = await anthropicCalls(wrapAnthropic(offline, { replay: tape.path }));
    expect(replayed).toEqual(recorded);
    expect(JSON.stringify(recorded.events)).toContain('input_json_delta');
  });

  it('writes llm.request / llm.chunk / llm.response frames whose messages resolve back to the request', async () => {
    server.loadScript(SCRIPT);
    const tape = new SessionTape({ dir, session: 'frames' });
    const client = wrapOpenAI(
      new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test', maxRetries: 0 }),
      {
        sink: () => tape.begin(),
      },
    );
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'please stream' }],
      stream: true,
    });
    for await (const _ of stream);
    await tape.close();
    const read = readTape(tape.path);
    expect(read.sealed).toBe(true);
    expect(read.header.workflowId).toBe('frames');
    const kinds = read.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds).toEqual(['llm.request', 'llm.chunk', 'llm.response', 'outcome', 'seal']);
    const request = read.frames.find((f) => f.kind === 'llm.request')?.payload as { messages: never };
    expect(resolveMessages(read, request.messages)).toEqual([{ role: 'user', content: 'please stream' }]);
    const chunk = read.frames.find((f) => f.kind === 'llm.chunk')?.payload;
    const text = chunkEntries(chunk, read.blobs)
      .map((c) => c[2] ?? '')
      .join('');
    expect(text).toBe('Streamed in many small pieces of text.');
  });

  it('answers a request the tape does not hold with an error naming the tape and the request', async () => {
    server.loadScript(SCRIPT);
    const tape = new SessionTape({ dir, session: 'unmatched' });
    const live = wrapOpenAI(new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test', maxRetries: 0 }), {
      sink: () => tape.begin(),
    });
    await live.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'plain' }],
    });
    await tape.close();
    const replay = wrapOpenAI(new OpenAI({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'x', maxRetries: 0 }), {
      replay: tape.path,
    });
    const err = await replay.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'something never asked' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const message = (err as Error).message;
    expect(message).toContain(tape.path);
    expect(message).toContain('something never asked');
    expect(message).toContain('no recorded answer');
  });
});
