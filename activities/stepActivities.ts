import { Context } from '@temporalio/activity';
import type { LlmClient } from '../llm/llmClient';
import type { LlmRequest, LlmResponse } from '../llm/types';
import type { ToolRegistry } from '../tools/toolRegistry';

export interface LlmStepInput {
  step: number;
  request: LlmRequest;
}

export interface ToolStepInput {
  step: number;
  name: string;
  args: Record<string, unknown>;
}

export interface StepActivityDeps {
  llm: LlmClient;
  tools: ToolRegistry;
}

/**
 * The activities behind `ctx.llm` and `ctx.tool`. All I/O of an agent happens here, never in the workflow.
 * Heartbeats on every streamed chunk let Temporal notice a dead worker within the heartbeat timeout instead of
 * the whole start-to-close timeout.
 */
export function createStepActivities(deps: StepActivityDeps) {
  return {
    async llmStep(input: LlmStepInput): Promise<LlmResponse> {
      const ctx = Context.current();
      return deps.llm.call(input.request, {
        signal: ctx.cancellationSignal,
        onChunk: (chunk) => ctx.heartbeat({ step: input.step, chunk: chunk.index }),
      });
    },

    async toolStep(input: ToolStepInput): Promise<unknown> {
      const ctx = Context.current();
      const tool = deps.tools.get(input.name);
      const result = await tool.run(input.args, { signal: ctx.cancellationSignal });
      // undefined does not survive the payload converter round trip; make "no result" explicit.
      return result === undefined ? null : result;
    },
  };
}

export type StepActivities = ReturnType<typeof createStepActivities>;
