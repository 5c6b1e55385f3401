import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxy } from '../../../src/integrations/proxy';
import { readTape, resolveMessages } from '../../../src/recorder/tape';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';

const SCRIPT = {
  name: 'sessions',
  turns: [
    {
      id: 'claude',
      match: { provider: 'anthropic' as const },
      reply: { text: 'Anthropic, streamed in pieces.', chunkSize: 4 },
      repeat: true,
    },
    { id: 'gpt', match: { provider: 'openai' as const }, reply: { text: 'OpenAI answer.' }, repeat: true },
  ],
};

async function claudeStream(client: Anthropic): Promise<unknown[]> {
  const events: unknown[] = [];
  const stream = await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'stream please' }],
    stream: true,
  });
  for await (const e of stream) events.push(e);
  return events;
}

describe('jbx proxy keeps one tape per session, Anthropic SSE included', () => {
  let model: ModelServer;
  beforeAll(async () => {
    model = await startModelServer({ script: SCRIPT });
  });
  afterAll(() => model.close());

  it('names sessions by header or by route, and replays an Anthropic stream event for event', async () => {
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-proxy-sessions-'));
    const proxy = await startProxy({ upstream: model.url, tapeDir });
    const byHeader = new Anthropic({
      baseURL: proxy.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      defaultHeaders: { 'x-jukebox-session': 'claude-run' },
    });
    const recorded = await claudeStream(byHeader);
    const byRoute = new OpenAI({ baseURL: `${proxy.url}/s/gpt-run/v1`, apiKey: 'sk-test', maxRetries: 0 });
    await byRoute.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    await byRoute.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'again' }],
    });
    const sessions = Object.fromEntries(proxy.sessions().map((s) => [s.session, s]));
    await proxy.close();

    expect(Object.keys(sessions).sort()).toEqual(['claude-run', 'gpt-run']);
    expect(sessions['gpt-run']?.calls).toBe(2);
    const gpt = readTape(sessions['gpt-run']?.tape as string);
    expect(gpt.header.workflowId).toBe('gpt-run');
    const asked = gpt.frames
      .filter((f) => f.kind === 'llm.request')
      .map((f) => resolveMessages(gpt, (f.payload as { messages: never }).messages));
    expect(asked).toEqual([[{ role: 'user', content: 'hi' }], [{ role: 'user', content: 'again' }]]);

    await model.close();
    const replayer = await startProxy({ replay: sessions['claude-run']?.tape as string });
    try {
      const replayed = await claudeStream(
        new Anthropic({ baseURL: replayer.url, apiKey: 'x', maxRetries: 0 }),
      );
      expect(replayed).toEqual(recorded);
      expect(recorded.length).toBeGreaterThan(5);
    } finally {
      await replayer.close();
    }
  });
});
