import { Context } from '@temporalio/activity';
import type { LlmClient } from '../llm/llmClient';
import type { LlmRequest, LlmResponse } from '../llm/types';
import { currentActivityTape } from '../recorder/activityTape';
import type { WithObservations } from '../recorder/observations';
import type { ToolRegistry } from '../tools/toolRegistry';

export interface LlmStepInput extends WithObservations {
  step: number;
  request: LlmRequest;
}

export interface ToolStepInput extends WithObservations {
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
 * the whole start-to-close timeout. With recording on, each step also records its request, every chunk and its
 * response (or tool call and result) on the run's tape.
 */
export function createStepActivities(deps: StepActivityDeps) {
  return {
    async llmStep(input: LlmStepInput): Promise<LlmResponse> {
      const ctx = Context.current();
      const tape = currentActivityTape();
      await tape?.llmRequest(input.request);
      const response = await deps.llm.call(input.request, {
        signal: ctx.cancellationSignal,
        onChunk: (chunk) => {
          ctx.heartbeat({ step: input.step, chunk: chunk.index });
          tape?.llmChunk(chunk);
        },
      });
      tape?.llmResponse(response);
      return response;
    },

    async toolStep(input: ToolStepInput): Promise<unknown> {
      const ctx = Context.current();
      const tape = currentActivityTape();
      await tape?.toolCall(input.name, input.args);
      let result: unknown;
      try {
        const tool = deps.tools.get(input.name);
        result = await tool.run(input.args, { signal: ctx.cancellationSignal });
      } catch (err) {
        tape?.toolError(err);
        throw err;
      }
      // undefined does not survive the payload converter round trip; make "no result" explicit.
      const output = result === undefined ? null : result;
      tape?.toolResult(output);
      return output;
    },
  };
}

export type StepActivities = ReturnType<typeof createStepActivities>;
