import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { anthropicFor, openaiFor } from './clients';

describe('a turn scripted with an error status', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: { turns: [{ reply: { text: 'x' } }] } });
  });
  afterAll(() => server.close());
  const flaky = () =>
    server.loadScript({
      turns: [
        { id: 'flaky', reply: { status: 500, text: 'The server is overloaded' } },
        { id: 'answer', reply: { text: 'Recovered.' } },
      ],
    });
  const user = [{ role: 'user' as const, content: 'hi' }];

  it('reaches the OpenAI SDK as an InternalServerError carrying the scripted message', async () => {
    flaky();
    const err = await openaiFor(server)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: user, stream: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as Error).message).toBe('500 The server is overloaded');
    expect(server.servedTurns()).toEqual([{ turnId: 'flaky', provider: 'openai', streamed: true }]);
  });

  it('reaches the Anthropic SDK as an InternalServerError of type api_error', async () => {
    flaky();
    const err = await anthropicFor(server)
      .messages.create({ model: 'claude-haiku-4-5', max_tokens: 9, messages: user })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    expect((err as InstanceType<typeof Anthropic.APIError>).apiMessage).toBe('The server is overloaded');
    expect((err as InstanceType<typeof Anthropic.APIError>).type).toBe('api_error');
  });

  it('is used up like any turn, so a retrying client gets the next turn', async () => {
    flaky();
    const res = await openaiFor(server, 2).chat.completions.create({ model: 'gpt-4o-mini', messages: user });
    expect(res.choices[0]?.message.content).toBe('Recovered.');
    expect(server.requestCount()).toBe(2);
    expect(server.servedTurns().map((t) => t.turnId)).toEqual(['flaky', 'answer']);
  });

  it('can use other statuses, with a default message naming the turn and script', async () => {
    server.loadScript({ name: 'limits', turns: [{ id: 'slow-down', reply: { status: 429 } }] });
    const err = await openaiFor(server)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: user })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as Error).message).toContain(
      'Scripted HTTP 429 from turn "slow-down" of model script "limits"',
    );
  });
});
