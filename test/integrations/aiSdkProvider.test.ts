import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { recordedOpenAIProvider, SessionTape } from '../../src/integrations';
import { verifyTape } from '../../src/recorder/tape';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';

const SCRIPT = {
  name: 'ai-sdk',
  turns: [
    { id: 'answer', match: { toolResult: '384400' }, reply: { text: 'About 384,400 km.', chunkSize: 4 } },
    {
      id: 'lookup',
      match: { lastUser: 'Moon' },
      reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'moon' } }] },
    },
    { id: 'stream', match: { lastUser: 'poem' }, reply: { text: 'Silver Moon, so far away.', chunkSize: 3 } },
  ],
};

const lookupFact = tool({
  description: 'Look up a fact',
  inputSchema: z.object({ topic: z.string() }),
  execute: async ({ topic }) => (topic === 'moon' ? '384400' : 'unknown'),
});

async function run(provider: ReturnType<typeof recordedOpenAIProvider>) {
  const generated = await generateText({
    model: provider.chat('gpt-4o-mini'),
    prompt: 'How far is the Moon?',
    tools: { lookup_fact: lookupFact },
    stopWhen: stepCountIs(3),
  });
  const streamed = streamText({ model: provider.chat('gpt-4o-mini'), prompt: 'a short poem' });
  const pieces: string[] = [];
  for await (const p of streamed.textStream) pieces.push(p);
  return {
    text: generated.text,
    steps: generated.steps.length,
    toolResults: generated.steps.flatMap((s) => s.toolResults.map((r) => r.output)),
    pieces,
  };
}

describe('the Vercel AI SDK through a recorded provider', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: SCRIPT });
  });
  afterAll(() => server.close());

  it('generateText with a tool loop and streamText replay from the tape with the same results', async () => {
    const tape = new SessionTape({
      dir: mkdtempSync(path.join(os.tmpdir(), 'jukebox-ai-sdk-')),
      session: 'ai',
    });
    const live = recordedOpenAIProvider(
      { baseURL: server.openaiBaseURL, apiKey: 'sk-test' },
      { sink: () => tape.begin() },
    );
    const recorded = await run(live);
    await tape.close();
    expect(recorded).toMatchObject({ text: 'About 384,400 km.', steps: 2, toolResults: ['384400'] });
    expect(recorded.pieces.join('')).toBe('Silver Moon, so far away.');
    expect(server.requestCount()).toBe(3);
    expect(verifyTape(tape.path).ok).toBe(true);

    const offline = recordedOpenAIProvider(
      { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'sk-test' },
      { replay: tape.path },
    );
    expect(await run(offline)).toEqual(recorded);
    expect(server.requestCount()).toBe(3);
  });
});
