import { Context } from '@temporalio/activity';
import { needsApprovalResult, type ToolStepApprovals, withBoothMark } from '../../agent/toolStepResult';
import type { ToolPolicy } from '../../agent/tools/toolPolicy';
import type { ToolRegistry } from '../../agent/tools/toolRegistry';
import type { BoothRuntime } from '../../booth/shadowBooth';
import type { StepStaging } from '../../booth/stepCheckpoint';
import { BreakerFeatureSource, type FeatureRequest } from '../../breaker/featureSource';
import type { DeferredEmbedding, MessageFeatures } from '../../breaker/features';
import { guardStream } from '../../breaker/guardStream';
import type { StreamBudget } from '../../breaker/streamGuard';
import type { LlmClient } from '../../llm/llmClient';
import { costOf } from '../../llm/pricing';
import type { LlmRequest, LlmResponse } from '../../llm/types';
import { currentActivityTape } from '../../recorder/activityTape';
import type { WithObservations } from '../../recorder/observations';
import { answerInheritedLlmStep, answerInheritedToolStep } from '../../timetravel/fork/inheritedSteps';
import type { InheritedStep } from '../../timetravel/fork/lineage';
import { afterStep } from '../worker/afterStep';
import { activityKey, activityRun } from './activityRun';

export interface LlmStepInput extends WithObservations {
  step: number;
  request: LlmRequest;
  /** A fork's step before its fork point: answered from the parent tape, never live. */
  inherit?: InheritedStep;
  /** The circuit breaker's cost cap for this step's track, checked on every streamed chunk. */
  budget?: StreamBudget;
  /** Set when the run's breaker watches this step: the answer's features and cost come back with it. */
  breaker?: FeatureRequest;
}

/** What the breaker learns from one answered llm step, computed where the answer is (no extra activity). */
export interface LlmStepObservation {
  usd: number;
  features: MessageFeatures;
  /** The embeddings of earlier answers that deferred theirs (`breaker.pendingEmbeddings` of the input). */
  embedded?: DeferredEmbedding[];
}

export type LlmStepResult = LlmResponse & { breaker?: LlmStepObservation };

export interface ToolStepInput extends WithObservations {
  step: number;
  name: string;
  args: Record<string, unknown>;
  inherit?: InheritedStep;
  /** What a person approved for this call; without it a tool or MCP call that asks ends the step unrun. */
  approvals?: ToolStepApprovals;
}

/** The activity that hands the workflow its tools' policies: not a step, so not on the tape. */
export const TOOL_POLICIES_ACTIVITY = 'toolPolicies';

export interface StepActivityDeps {
  llm: LlmClient;
  tools: ToolRegistry;
  /** The worker's Shadow Booth, if it has one: tools reach their run's booth through their invocation. */
  booth?: BoothRuntime;
  /** The breaker's feature extraction (and its loaded embedding model), shared with the breaker activities. */
  breakerFeatures?: BreakerFeatureSource;
}

/**
 * The activities behind `ctx.llm` and `ctx.tool`. All I/O of an agent happens here, never in the workflow.
 * They heartbeat on a timer while they run, however long they are quiet (KeepAliveInterceptor,
 * src/temporal/worker/keepAlive.ts), so Temporal notices a dead worker within the heartbeat timeout and never
 * mistakes a slow step for one. With recording on, each step also records its request, every chunk and its
 * response (or tool call and result) on the run's tape.
 */
export function createStepActivities(deps: StepActivityDeps) {
  let features = deps.breakerFeatures;
  return {
    async llmStep(input: LlmStepInput): Promise<LlmStepResult> {
      const ctx = Context.current();
      const tape = currentActivityTape();
      if (input.inherit) return answerInheritedLlmStep({ ...input, inherit: input.inherit }, tape);
      await tape?.llmRequest(input.request);
      const exec = activityRun();
      const run = `${exec.workflowId}/${exec.runId}`;
      // Earlier answers' deferred embeddings: normally done while the workflow ran the tool steps; a miss (another
      // worker deferred it) is computed on the embedding thread while the model answers.
      if (input.breaker) features ??= new BreakerFeatureSource();
      const embedded = input.breaker?.pendingEmbeddings?.length
        ? features?.collectDeferred(input.breaker, run)
        : undefined;
      const response = await guardStream(
        input.budget,
        input.request,
        ctx.cancellationSignal,
        (signal, watch) =>
          deps.llm.call(input.request, {
            signal,
            onChunk: (chunk) => {
              tape?.llmChunk(chunk);
              watch(chunk);
            },
          }),
      );
      tape?.llmResponse(response);
      if (!input.breaker || !features) return response;
      const observed: LlmStepObservation = {
        usd: costOf({ provider: input.request.provider, model: input.request.model, usage: response.usage }),
        features: await features.features(
          {
            text: response.text,
            toolCalls: response.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })),
          },
          input.breaker,
          ctx.cancellationSignal,
          run ? { run, step: input.step, startWhen: afterStep } : undefined,
        ),
        ...(embedded ? { embedded: await embedded } : {}),
      };
      return { ...response, breaker: observed };
    },

    /**
     * The timeout and retry policy of every tool on this worker that sets one. The workflow asks once per run, as
     * a local activity (src/temporal/workflow/toolSteps.ts); its history keeps the answer, so a replay picks the
     * same activity options for every tool step.
     */
    async toolPolicies(): Promise<Record<string, ToolPolicy>> {
      return deps.tools.policies();
    },

    async toolStep(input: ToolStepInput): Promise<unknown> {
      const ctx = Context.current();
      const tape = currentActivityTape();
      if (input.inherit) return answerInheritedToolStep({ ...input, inherit: input.inherit }, tape);
      // A tool whose definition asks a person: nothing runs (not even its tool.call is recorded) until they did.
      const asks = deps.tools.approvalOf(input.name);
      if (asks && !input.approvals?.tool)
        return needsApprovalResult({
          kind: 'tool',
          reason:
            (asks !== true ? asks.reason : undefined) ??
            `every call of tool ${input.name} waits for a person's approval`,
          subject: { tool: input.name, args: input.args },
          ...(asks !== true ? { options: asks } : {}),
        });
      await tape?.toolCall(input.name, input.args);
      let output: unknown;
      let staging: StepStaging | undefined;
      try {
        const tool = deps.tools.get(input.name);
        const run = activityRun();
        // Each attempt of a tool step stages in the step's own pending area; it becomes the run's staging with
        // the step's checkpoint, and a retry reuses a checkpointed attempt or discards a partial one.
        const opened = deps.booth
          ? await deps.booth.openStep(
              run.workflowId,
              run.runId,
              // Unique across the segments of a run that continued as new, whose staging is one.
              { id: activityKey(), attempt: ctx.info.attempt },
              ctx.cancellationSignal,
            )
          : undefined;
        staging = opened?.staging;
        if (opened && input.approvals?.mcp) opened.booth.mcp.allow(input.approvals.mcp);
        try {
          if (opened?.reused) output = opened.reused.result;
          else {
            let result: unknown;
            let failure: { err: unknown } | undefined;
            try {
              result = await tool.run(input.args, {
                signal: ctx.cancellationSignal,
                ...(opened ? { booth: opened.booth } : {}),
              });
            } catch (err) {
              failure = { err };
            }
            // Whatever the tool threw once its signal fired (an AbortError, a typed error of its own), the step was
            // cancelled: Temporal learns that from the signal's CancelledFailure, and a run waiting on the
            // cancellation sees it confirmed. The tool's own error is still what the tape records.
            if (failure && ctx.cancellationSignal.aborted) {
              tape?.toolError(failure.err);
              throw ctx.cancellationSignal.reason;
            }
            // An MCP call in it waits for a person (even if the tool caught the error): the step stages nothing.
            const waiting = opened?.booth.mcp.approvalNeeded;
            if (opened && waiting) {
              await opened.booth.abandonStep();
              return needsApprovalResult({
                kind: 'mcp',
                reason: waiting.reason,
                subject: { server: waiting.server, tool: waiting.tool, args: waiting.args },
              });
            }
            if (failure) throw failure.err;
            // undefined does not survive the payload converter round trip; make "no result" explicit.
            output = result === undefined ? null : result;
            await opened?.booth.completeStep(output);
          }
        } finally {
          await opened?.booth.close();
        }
      } catch (err) {
        if (err !== ctx.cancellationSignal.reason) tape?.toolError(err);
        throw err;
      }
      tape?.toolResult(output, staging);
      await deps.booth?.faultPoint('step:completed');
      return deps.booth ? withBoothMark(output) : output;
    },
  };
}

export type StepActivities = ReturnType<typeof createStepActivities>;
