import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { anthropicFor, type ErrorBody, jsonOf, openaiFor } from './clients';

const SCRIPT = { name: 'counted', turns: [{ id: 'any', reply: { text: 'ok' }, repeat: true }] };
const user = [{ role: 'user' as const, content: 'hi' }];

describe('the model server counts what it served', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: SCRIPT });
  });
  afterAll(() => server.close());

  it('counts requests and records each served turn with provider and streaming', async () => {
    server.loadScript(SCRIPT);
    await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
    const stream = await openaiFor(server).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: user,
      stream: true,
    });
    for await (const _ of stream);
    await anthropicFor(server)
      .messages.stream({ model: 'claude-haiku-4-5', max_tokens: 9, messages: user })
      .finalMessage();
    expect(server.requestCount()).toBe(3);
    expect(server.servedTurns()).toEqual([
      { turnId: 'any', provider: 'openai', streamed: false },
      { turnId: 'any', provider: 'openai', streamed: true },
      { turnId: 'any', provider: 'anthropic', streamed: true },
    ]);
  });

  it('resets the counts when a script is loaded', async () => {
    await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
    server.loadScript(SCRIPT);
    expect(server.requestCount()).toBe(0);
    expect(server.servedTurns()).toEqual([]);
  });

  it('counts a malformed request, answered with an API-shaped 400', async () => {
    server.loadScript(SCRIPT);
    const res = await fetch(`${server.openaiBaseURL}/chat/completions`, {
      method: 'POST',
      body: '{not json',
    });
    expect(res.status).toBe(400);
    expect((await jsonOf<ErrorBody>(res)).error.message).toMatch(/not valid JSON/);
    expect(server.requestCount()).toBe(1);
  });

  it('accepts any API key, or none', async () => {
    server.loadScript(SCRIPT);
    const res = await fetch(`${server.anthropicBaseURL}/v1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer nonsense' },
      body: JSON.stringify({ model: 'claude', max_tokens: 9, messages: user }),
    });
    expect(res.status).toBe(200);
  });

  describe('over HTTP, for a worker in another process', () => {
    it('serves stats at GET /_jukebox/stats', async () => {
      server.loadScript(SCRIPT);
      await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
      const stats = await (await fetch(`${server.url}/_jukebox/stats`)).json();
      expect(stats).toMatchObject({
        script: 'counted',
        requests: 1,
        served: [{ turnId: 'any', provider: 'openai', streamed: false }],
      });
    });

    it('loads a script posted to /_jukebox/script, and rejects an invalid one naming the field', async () => {
      const script = { name: 'posted', turns: [{ id: 'p', reply: { text: 'from the posted script' } }] };
      const ok = await fetch(`${server.url}/_jukebox/script`, {
        method: 'POST',
        body: JSON.stringify(script),
      });
      expect(await ok.json()).toEqual({ ok: true, script: 'posted', turns: 1 });
      const res = await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
      expect(res.choices[0]?.message.content).toBe('from the posted script');

      const bad = await fetch(`${server.url}/_jukebox/script`, {
        method: 'POST',
        body: JSON.stringify({ turns: [{}] }),
      });
      expect(bad.status).toBe(400);
      const body = await jsonOf<ErrorBody>(bad);
      expect(body.error.code).toBe('MODEL_SCRIPT_INVALID');
      expect(body.error.message).toContain('turns[0].reply is missing');
    });

    it('makes every turn available again and zeroes counts on POST /_jukebox/reset', async () => {
      server.loadScript({ turns: [{ id: 'once', reply: { text: 'only once' } }] });
      await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
      await fetch(`${server.url}/_jukebox/reset`, { method: 'POST' });
      expect(server.requestCount()).toBe(0);
      const res = await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
      expect(res.choices[0]?.message.content).toBe('only once');
      expect(server.servedTurns().map((t) => t.turnId)).toEqual(['once']);
    });

    it('answers an unknown route with a 404 that lists the routes', async () => {
      const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', body: '{}' });
      expect(res.status).toBe(404);
      expect((await jsonOf<ErrorBody>(res)).error.message).toContain('POST /v1/chat/completions');
    });
  });
});
