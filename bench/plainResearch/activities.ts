/**
 * The sample research agent's activities written the plain Temporal way: the model call takes the whole
 * conversation as its input and returns the answer as its result; a tool call runs the same tool code. Same
 * model client, same request, same tools as the Jukebox agent: the equal-work peer of the load bench.
 */

import { Context } from '@temporalio/activity';
import { researchToolSpecs } from '../../examples/sample/agent';
import { researchTools } from '../../examples/sample/tools';
import { LlmClient, type LlmEndpoints } from '../../src/llm';
import type { ChatMessage, LlmResponse } from '../../src/llm/types';

/** The request the sample agent sends (examples/sample/agent.ts), so both sides ask the model the same thing. */
export const RESEARCH_SYSTEM = 'You are a careful research assistant. Use the tools; never guess a number.';

export function plainResearchActivities(endpoints: LlmEndpoints) {
  const llm = new LlmClient(endpoints);
  const tools = new Map(researchTools.map((t) => [t.spec.name, t]));
  return {
    async callModel(messages: ChatMessage[]): Promise<LlmResponse> {
      return llm.call({
        provider: 'openai',
        model: 'gpt-4o-mini',
        system: RESEARCH_SYSTEM,
        messages,
        tools: researchToolSpecs,
      });
    },
    async callTool(name: string, args: Record<string, unknown>): Promise<unknown> {
      const tool = tools.get(name);
      if (!tool) throw new Error(`the research agent has no tool named ${name}`);
      return tool.run(args, { signal: Context.current().cancellationSignal });
    },
  };
}

export type PlainResearchActivities = ReturnType<typeof plainResearchActivities>;
