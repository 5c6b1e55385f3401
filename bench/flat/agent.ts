import { defineAgent } from '../../src/agent';

/**
 * A flat run: every step sends the model the same-sized request (one question, no history) and runs one tool,
 * so neither the requests nor the Temporal history grow with the conversation. The recording suite's
 * counterpart of the research agent's growing chat, where the history resends the conversation each step.
 */
export const flatAgent = defineAgent<{ steps: number }, { steps: number }>(
  'flatAgent',
  async (ctx, input) => {
    for (let i = 0; i < input.steps; i++) {
      await ctx.llm({
        provider: 'openai',
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `Check item ${i} of the list.` }],
      });
      await ctx.tool('lookup_fact', { topic: `item-${i}` });
    }
    return { steps: input.steps };
  },
);
