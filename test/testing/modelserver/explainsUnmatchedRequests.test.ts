import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { anthropicFor, openaiFor } from './clients';

describe('a request no turn matches', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: { turns: [{ reply: { text: 'x' } }] } });
  });
  afterAll(() => server.close());
  const load = () =>
    server.loadScript({
      name: 'weather-flow',
      turns: [
        { id: 'plan', match: { lastUser: 'weather' }, reply: { text: 'Planning.' } },
        { id: 'finish', match: { toolResult: 'sunny' }, reply: { text: 'It is sunny.' } },
      ],
    });

  it('fails through the OpenAI SDK as a 400 APIError that names script, request and remaining turns', async () => {
    load();
    const err = await openaiFor(server)
      .chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [
          { role: 'user', content: 'Tell me a joke' },
          { role: 'tool', tool_call_id: 'c1', content: 'rainy all week' },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const apiError = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(400);
    expect(apiError.code).toBe('no_turn_matched');
    expect(apiError.type).toBe('invalid_request_error');
    expect(apiError.message).toBe(
      '400 Model script "weather-flow" (the in-memory script): no turn matched this openai request. ' +
        'model: "gpt-4o-mini"; last user message: "Tell me a joke"; last tool result: "rainy all week". ' +
        'Remaining turns: plan (wants lastUser containing "weather"), finish (wants toolResult containing "sunny"). ' +
        'Add a turn whose match holds for this request, or loosen a match.',
    );
  });

  it('fails through the Anthropic SDK as a 400 APIError, and lists only turns not yet used', async () => {
    load();
    const client = anthropicFor(server);
    const user = (content: string) => [{ role: 'user' as const, content }];
    await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 9,
      messages: user('the weather?'),
    });
    const err = await client.messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 9, messages: user('the weather again?') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const apiError = err as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.status).toBe(400);
    expect(apiError.type).toBe('invalid_request_error');
    expect(apiError.apiMessage).toBe(
      'Model script "weather-flow" (the in-memory script): no turn matched this anthropic request. ' +
        'model: "claude-haiku-4-5"; last user message: "the weather again?"; last tool result: (none). ' +
        'Remaining turns: finish (wants toolResult containing "sunny"); 1 turn(s) already used (a turn is used once unless repeat: true). ' +
        'Add a turn whose match holds for this request, or loosen a match.',
    );
  });

  it('counts the unmatched request but serves no turn for it', async () => {
    load();
    await openaiFor(server)
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'nothing matches' }] })
      .catch(() => undefined);
    expect(server.requestCount()).toBe(1);
    expect(server.servedTurns()).toEqual([]);
  });
});
