/**
 * The page agent's activities written the plain Temporal way: the model call takes the whole conversation as its
 * input and returns the answer as its result, so both land in the workflow history at every step.
 */

import { pageToolSpecs } from '../../examples/pages/agent';
import { pageText } from '../../examples/pages/tools';
import { LlmClient, type LlmEndpoints } from '../../src/llm';
import type { ChatMessage, LlmResponse } from '../../src/llm/types';

export function plainPageActivities(endpoints: LlmEndpoints, pageBytes: number) {
  const llm = new LlmClient(endpoints);
  return {
    async callModel(messages: ChatMessage[]): Promise<LlmResponse> {
      return llm.call({
        provider: 'openai',
        model: 'gpt-4o-mini',
        system: 'You read the archive page by page with read_page, then summarize it.',
        messages,
        tools: pageToolSpecs,
      });
    },
    async readPage(page: number): Promise<string> {
      return pageText(page, pageBytes);
    },
  };
}

export type PlainPageActivities = ReturnType<typeof plainPageActivities>;
