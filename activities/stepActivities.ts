import { Context } from '@temporalio/activity';
import { withBoothMark } from '../agent/toolStepResult';
import { guardStream } from '../breaker/guardStream';
import type { StreamBudget } from '../breaker/streamGuard';
import { answerInheritedLlmStep, answerInheritedToolStep } from '../fork/inheritedSteps';
import type { InheritedStep } from '../fork/lineage';
import type { LlmClient } from '../llm/llmClient';
import type { LlmRequest, LlmResponse } from '../llm/types';
import { currentActivityTape } from '../recorder/activityTape';
import type { WithObservations } from '../recorder/observations';
import type { BoothRuntime } from '../sandbox/shadowBooth';
import type { ToolRegistry } from '../tools/toolRegistry';

export interface LlmStepInput extends WithObservations {
  step: number;
  request: LlmRequest;
  /** A fork's step before its fork point: answered from the parent tape, never live. */
  inherit?: InheritedStep;
  /** The circuit breaker's cost cap for this step's track, checked on every streamed chunk. */
  budget?: StreamBudget;
}

export interface ToolStepInput extends WithObservations {
  step: number;
  name: string;
  args: Record<string, unknown>;
  inherit?: InheritedStep;
}

export interface StepActivityDeps {
  llm: LlmClient;
  tools: ToolRegistry;
  /** The worker's Shadow Booth, if it has one: tools reach their run's booth through their invocation. */
  booth?: BoothRuntime;
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
      if (input.inherit) return answerInheritedLlmStep({ ...input, inherit: input.inherit }, tape);
      await tape?.llmRequest(input.request);
      const response = await guardStream(
        input.budget,
        input.request,
        ctx.cancellationSignal,
        (signal, watch) =>
          deps.llm.call(input.request, {
            signal,
            onChunk: (chunk) => {
              ctx.heartbeat({ step: input.step, chunk: chunk.index });
              tape?.llmChunk(chunk);
              watch(chunk);
            },
          }),
      );
      tape?.llmResponse(response);
      return response;
    },

    async toolStep(input: ToolStepInput): Promise<unknown> {
      const ctx = Context.current();
      const tape = currentActivityTape();
      if (input.inherit) return answerInheritedToolStep({ ...input, inherit: input.inherit }, tape);
      await tape?.toolCall(input.name, input.args);
      let result: unknown;
      try {
        const tool = deps.tools.get(input.name);
        const run = ctx.info.workflowExecution;
        const booth = deps.booth && run ? await deps.booth.open(run.workflowId, run.runId) : undefined;
        try {
          result = await tool.run(input.args, {
            signal: ctx.cancellationSignal,
            ...(booth ? { booth } : {}),
          });
        } finally {
          await booth?.close();
        }
      } catch (err) {
        tape?.toolError(err);
        throw err;
      }
      // undefined does not survive the payload converter round trip; make "no result" explicit.
      const output = result === undefined ? null : result;
      tape?.toolResult(output);
      return deps.booth ? withBoothMark(output) : output;
    },
  };
}

export type StepActivities = ReturnType<typeof createStepActivities>;
