import { defineAgent, runToolLoop } from '../../src/agent';
import type { Provider, ToolSpec } from '../../src/llm/types';

export interface ResearchInput {
  question: string;
  provider?: Provider;
  model?: string;
  maxTurns?: number;
}

export interface ResearchOutput {
  answer: string;
  turns: number;
}

/** Tool shapes the model is offered; the implementations run in activities (see ./tools). */
export const researchToolSpecs: ToolSpec[] = [
  {
    name: 'lookup_fact',
    description: 'Look up a fact about a topic in the team knowledge base.',
    parameters: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
  },
  {
    name: 'calculate',
    description: 'Evaluate an arithmetic expression with + - * / and parentheses.',
    parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
];

/** The sample agent: answers a question by looking facts up and doing arithmetic, a tool call per step. */
export const researchAgent = defineAgent<ResearchInput, ResearchOutput>(
  'researchAgent',
  async (ctx, input) => {
    const result = await runToolLoop(ctx, {
      provider: input.provider ?? 'openai',
      model: input.model ?? 'gpt-4o-mini',
      system: 'You are a careful research assistant. Use the tools; never guess a number.',
      messages: [{ role: 'user', content: input.question }],
      tools: researchToolSpecs,
      maxTurns: input.maxTurns,
    });
    return { answer: result.text, turns: result.turns };
  },
);
