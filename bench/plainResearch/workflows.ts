/**
 * The sample research agent (examples/sample/agent.ts) as a user writes it on Temporal without Jukebox: a workflow
 * that keeps the conversation and hands all of it to the model activity at every turn, and a tool activity per
 * tool call, as runToolLoop does.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ChatMessage } from '../../src/llm/types';
import type { PlainResearchActivities } from './activities';

const { callModel, callTool } = proxyActivities<PlainResearchActivities>({
  startToCloseTimeout: 120_000,
  retry: { maximumAttempts: 1 },
});

export async function plainResearchAgent(input: {
  question: string;
  maxTurns: number;
}): Promise<{ answer: string; turns: number }> {
  const messages: ChatMessage[] = [{ role: 'user', content: input.question }];
  for (let turn = 1; turn <= input.maxTurns; turn++) {
    const response = await callModel(messages);
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
    if (response.toolCalls.length === 0) return { answer: response.text, turns: turn };
    for (const call of response.toolCalls) {
      const result = await callTool(call.name, call.arguments);
      messages.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: typeof result === 'string' ? result : JSON.stringify(result),
      });
    }
  }
  throw new Error(`no answer after ${input.maxTurns} turns`);
}
