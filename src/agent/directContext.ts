import type { LlmClient } from '../llm/llmClient';
import { type AgentContext, boothUnavailable } from './context';
import type { ToolRegistry } from './tools/toolRegistry';

/**
 * Runs an agent in this process with no Temporal underneath: every step goes straight to the model and tools.
 * Not durable; it is the baseline that measures what Temporal adds, and a quick way to try an agent.
 */
export function createDirectContext(deps: { llm: LlmClient; tools: ToolRegistry }): AgentContext {
  let started = 0;
  return {
    get steps() {
      return started;
    },
    workflowId: 'direct',
    runId: 'direct',
    llm(request) {
      started++;
      return deps.llm.call(request);
    },
    async tool<T>(name: string, args: Record<string, unknown>) {
      started++;
      const result = await deps.tools.get(name).run(args, { signal: new AbortController().signal });
      return result as T;
    },
    random: () => Math.random(),
    now: () => Date.now(),
    ...boothUnavailable('a direct (non-Temporal) context'),
  };
}
