import {
  ApplicationFailure,
  defineQuery,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { StepActivities } from '../activities/stepActivities';
import type { AgentContext, AgentDefinition, AgentRunResult, StepSummary } from '../agent/context';
import { JukeboxError } from '../errors/JukeboxError';
import type { LlmResponse } from '../llm/types';
import { type AgentRunOptions, DEFAULT_RUN_OPTIONS } from './runOptions';

/** Steps finished so far, for clients that show progress while a run is going. */
export const progressQuery = defineQuery<StepSummary[]>('jukebox.progress');

function summarizeLlm(index: number, response: LlmResponse): StepSummary {
  const detail = response.toolCalls.length
    ? `calls ${response.toolCalls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join(', ')}`
    : `answers ${JSON.stringify(response.text.slice(0, 120))}`;
  return {
    index,
    kind: 'llm',
    name: response.model,
    detail,
    inputTokens: response.usage.inputTokens,
    outputTokens: response.usage.outputTokens,
  };
}

/**
 * Turns an agent into a Temporal workflow: the agent function is the workflow body, each `ctx.llm` / `ctx.tool`
 * is an activity, `ctx.random` / `ctx.now` are the workflow's deterministic random and clock.
 */
export function agentWorkflow<I, O>(agent: AgentDefinition<I, O>) {
  const workflow = async (input: I, options: AgentRunOptions = {}): Promise<AgentRunResult<O>> => {
    const o = { ...DEFAULT_RUN_OPTIONS, ...options };
    const activities = proxyActivities<StepActivities>({
      startToCloseTimeout: o.stepTimeoutMs,
      heartbeatTimeout: o.heartbeatTimeoutMs,
      retry: {
        maximumAttempts: o.maximumAttempts,
        initialInterval: o.initialRetryIntervalMs,
        backoffCoefficient: 2,
      },
    });
    const steps: StepSummary[] = [];
    setHandler(progressQuery, () => steps);
    let started = 0;
    const info = workflowInfo();

    const ctx: AgentContext = {
      get steps() {
        return started;
      },
      workflowId: info.workflowId,
      runId: info.runId,
      async llm(request) {
        const step = started++;
        const response = await activities.llmStep({ step, request });
        steps.push(summarizeLlm(step, response));
        return response;
      },
      async tool<T>(name: string, args: Record<string, unknown>) {
        const step = started++;
        const result = await activities.toolStep({ step, name, args });
        steps.push({ index: step, kind: 'tool', name, detail: JSON.stringify(result).slice(0, 120) });
        return result as T;
      },
      random: () => Math.random(),
      now: () => Date.now(),
    };

    try {
      return { output: await agent.run(ctx, input), steps };
    } catch (err) {
      // A plain error thrown by workflow code would fail the workflow task and retry it forever; an agent's own
      // typed error ends the run with its retry semantics instead.
      if (err instanceof JukeboxError)
        throw ApplicationFailure.create({
          message: err.message,
          type: err.name,
          nonRetryable: err.nonRetryable,
          details: [{ code: err.code }],
        });
      throw err;
    }
  };
  Object.defineProperty(workflow, 'name', { value: agent.name });
  return workflow;
}
