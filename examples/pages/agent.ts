/**
 * A reading agent (workflow code): it asks the model which page to read next, reads it with a tool, and feeds
 * the page back, for as many turns as the model keeps asking. Pages are long (8 KB by default), so its
 * conversation grows the way a research or coding agent's does. With `window`, the model sees only the last
 * turns (a long-running agent that keeps its context bounded). It reads the clock once and draws a random number
 * every seventh turn, so its output depends on every kind of recorded reading.
 */
import { AgentTurnLimitError, defineAgent } from '../../src/agent';
import type { ChatMessage, Provider, ToolSpec } from '../../src/llm/types';

export interface PageInput {
  /** Pages the model is expected to ask for; the loop allows two more turns than this. */
  pages: number;
  /** Turns (an answer and its pages) the model sees besides the first message; default: all of them. */
  window?: number;
  provider?: Provider;
  model?: string;
}

export interface PageOutput {
  answer: string;
  turns: number;
  /** Characters of every page read, summed. */
  readChars: number;
  startedAt: number;
  /** The sum of the random draws, as integers below 1000. */
  draws: number;
}

export const pageToolSpecs: ToolSpec[] = [
  {
    name: 'read_page',
    description: 'Read one page of the archive by its number.',
    parameters: { type: 'object', properties: { page: { type: 'number' } }, required: ['page'] },
  },
];

export const pageAgent = defineAgent<PageInput, PageOutput>('pageAgent', async (ctx, input) => {
  const startedAt = ctx.now();
  const first: ChatMessage = {
    role: 'user',
    content: `Read the archive, ${input.pages} pages, then summarize.`,
  };
  const turns: ChatMessage[][] = [];
  let readChars = 0;
  let draws = 0;
  const maxTurns = input.pages + 2;
  for (let turn = 1; turn <= maxTurns; turn++) {
    const seen = input.window === undefined ? turns : turns.slice(-input.window);
    const response = await ctx.llm({
      provider: input.provider ?? 'openai',
      model: input.model ?? 'gpt-4o-mini',
      system: 'You read the archive page by page with read_page, then summarize it.',
      messages: [first, ...seen.flat()],
      tools: pageToolSpecs,
    });
    const messages: ChatMessage[] = [
      { role: 'assistant', content: response.text, toolCalls: response.toolCalls },
    ];
    if (response.toolCalls.length === 0)
      return { answer: response.text, turns: turn, readChars, startedAt, draws };
    for (const call of response.toolCalls) {
      const page = await ctx.tool<string>(call.name, call.arguments);
      readChars += page.length;
      messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: page });
    }
    turns.push(messages);
    if (turn % 7 === 0) draws += Math.floor(ctx.random() * 1000);
  }
  throw new AgentTurnLimitError(maxTurns);
});
