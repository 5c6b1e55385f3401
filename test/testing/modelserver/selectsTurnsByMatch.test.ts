import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { anthropicFor, openaiFor } from './clients';

const QUESTION = 'How far is the Moon?';

describe('the model server picks the first unused turn whose match holds', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({ script: { turns: [{ reply: { text: 'x' } }] } });
  });
  afterAll(() => server.close());

  const openaiText = async (
    messages: Parameters<ReturnType<typeof openaiFor>['chat']['completions']['create']>[0]['messages'],
  ) =>
    (await openaiFor(server).chat.completions.create({ model: 'gpt-4o-mini', messages })).choices[0]?.message
      .content;

  it('matches the last user message and the last OpenAI tool result (role: tool)', async () => {
    server.loadScript({
      turns: [
        { id: 'answer', match: { toolResult: '384400' }, reply: { text: 'About 384,400 km.' } },
        { id: 'look-up', match: { lastUser: 'the Moon' }, reply: { text: 'Let me look that up.' } },
      ],
    });
    expect(await openaiText([{ role: 'user', content: QUESTION }])).toBe('Let me look that up.');
    const afterTool = await openaiText([
      { role: 'user', content: QUESTION },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'moon distance: 384400 km' },
    ]);
    expect(afterTool).toBe('About 384,400 km.');
    expect(server.servedTurns().map((t) => t.turnId)).toEqual(['look-up', 'answer']);
  });

  it('matches an Anthropic tool_result block, and reads lastUser past messages holding only tool results', async () => {
    server.loadScript({
      turns: [
        {
          id: 'answer',
          match: { toolResult: '384400', lastUser: 'the Moon' },
          reply: { text: 'About 384,400 km.' },
        },
      ],
    });
    const res = await anthropicFor(server).messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      messages: [
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '384400 km' }] },
          ],
        },
      ],
    });
    expect(res.content[0]).toMatchObject({ type: 'text', text: 'About 384,400 km.' });
  });

  it('matches on provider and model', async () => {
    server.loadScript({
      turns: [
        { id: 'claude', match: { provider: 'anthropic' }, reply: { text: 'from claude' }, repeat: true },
        { id: 'mini', match: { model: 'gpt-4o-mini' }, reply: { text: 'from mini' }, repeat: true },
        { id: 'other', reply: { text: 'from another model' }, repeat: true },
      ],
    });
    const user = [{ role: 'user' as const, content: 'hi' }];
    const anthropic = await anthropicFor(server).messages.create({
      model: 'gpt-4o-mini',
      max_tokens: 9,
      messages: user,
    });
    expect(anthropic.content[0]).toMatchObject({ text: 'from claude' });
    expect(await openaiText(user)).toBe('from mini');
    const other = await openaiFor(server).chat.completions.create({ model: 'gpt-4.1', messages: user });
    expect(other.choices[0]?.message.content).toBe('from another model');
  });

  it('uses a turn once unless it repeats, falling through to later turns in file order', async () => {
    server.loadScript({
      turns: [
        { id: 'first', reply: { text: 'one' } },
        { id: 'again', reply: { text: 'many' }, repeat: true },
        { id: 'never', reply: { text: 'unreachable' } },
      ],
    });
    const texts = [];
    for (let i = 0; i < 4; i++) texts.push(await openaiText([{ role: 'user', content: 'hi' }]));
    expect(texts).toEqual(['one', 'many', 'many', 'many']);
    expect(server.servedTurns().map((t) => t.turnId)).toEqual(['first', 'again', 'again', 'again']);
  });

  it('names turns without an id by their position in the script', async () => {
    server.loadScript({ turns: [{ reply: { text: 'a' } }, { reply: { text: 'b' } }] });
    await openaiText([{ role: 'user', content: 'hi' }]);
    await openaiText([{ role: 'user', content: 'hi' }]);
    expect(server.servedTurns().map((t) => t.turnId)).toEqual(['turns[0]', 'turns[1]']);
  });
});
