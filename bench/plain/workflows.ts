/**
 * The page agent (examples/pages/agent.ts) as a user writes it on Temporal without Jukebox: a workflow that keeps
 * the conversation and hands all of it to the model activity at every turn.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ChatMessage } from '../../src/llm/types';
import type { PlainPageActivities } from './activities';

const { callModel, readPage } = proxyActivities<PlainPageActivities>({
  startToCloseTimeout: 120_000,
  retry: { maximumAttempts: 1 },
});

export async function plainPageAgent(pages: number): Promise<{ answer: string; turns: number }> {
  const messages: ChatMessage[] = [
    { role: 'user', content: `Read the archive, ${pages} pages, then summarize.` },
  ];
  for (let turn = 1; turn <= pages + 2; turn++) {
    const response = await callModel(messages);
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
    if (response.toolCalls.length === 0) return { answer: response.text, turns: turn };
    for (const call of response.toolCalls)
      messages.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: await readPage((call.arguments as { page: number }).page),
      });
  }
  throw new Error(`no answer after ${pages + 2} turns`);
}
