/**
 * Workflow interceptors for the workflow bundle (not a workflow): Temporal's own OpenTelemetry interceptors
 * (the RunWorkflow / StartActivity spans, trace context carried to activities in headers), plus one
 * `invoke_agent {agent}` span around the agent's run, so every chat / execute_tool span of the run hangs
 * under it. The span is ended by workflow code, so it is exported through Temporal's sink, and its times are
 * the workflow's deterministic clock. Runs inside the workflow sandbox: no I/O, no Node APIs.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import {
  type ActivityInput,
  type Next,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import {
  ATTR,
  agentSpanName,
  GENAI_SCHEMA_URL,
  INSTRUMENTATION_NAME,
  LLM_STEP_ACTIVITY,
  WORKFLOW_INTERCEPTORS_MARKER,
} from '../../telemetry/conventions';
import { agentAttributes, errorType } from '../../telemetry/genAiAttributes';

/** What the run's model steps add up to; the invoke_agent span carries the totals. */
class RunUsage {
  inputTokens = 0;
  outputTokens = 0;
  provider: string | undefined;
  model: string | undefined;
}

class InvokeAgentInterceptor implements WorkflowInboundCallsInterceptor {
  constructor(private readonly usage: RunUsage) {}

  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
    const info = workflowInfo();
    // Temporal's inbound interceptor registered its tracer provider globally inside this sandbox.
    const tracer = trace
      .getTracerProvider()
      .getTracer(INSTRUMENTATION_NAME, undefined, { schemaUrl: GENAI_SCHEMA_URL });
    const attributes = agentAttributes(info.workflowType, info.workflowId, info.runId);
    return tracer.startActiveSpan(
      agentSpanName(info.workflowType),
      { kind: SpanKind.INTERNAL, attributes },
      async (span) => {
        try {
          const result = await next(input);
          span.setStatus({ code: SpanStatusCode.OK });
          return result;
        } catch (err) {
          span.setAttribute(ATTR.errorType, errorType((err as { cause?: unknown })?.cause ?? err));
          span.setStatus({ code: SpanStatusCode.ERROR, message: String((err as Error)?.message ?? err) });
          throw err;
        } finally {
          if (this.usage.provider) span.setAttribute(ATTR.providerName, this.usage.provider);
          if (this.usage.model) span.setAttribute(ATTR.requestModel, this.usage.model);
          span.setAttribute(ATTR.usageInputTokens, this.usage.inputTokens);
          span.setAttribute(ATTR.usageOutputTokens, this.usage.outputTokens);
          span.end();
        }
      },
    );
  }
}

class UsageCountingInterceptor implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly usage: RunUsage) {}

  async scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ) {
    const result = await next(input);
    if (input.activityType === LLM_STEP_ACTIVITY) {
      const r = result as {
        provider?: string;
        model?: string;
        usage?: { inputTokens?: number; outputTokens?: number };
      };
      this.usage.provider ??= r?.provider;
      this.usage.model ??= r?.model;
      this.usage.inputTokens += r?.usage?.inputTokens ?? 0;
      this.usage.outputTokens += r?.usage?.outputTokens ?? 0;
    }
    return result;
  }
}

export const interceptors = (): WorkflowInterceptors => {
  const usage = new RunUsage();
  // Referenced so the bundle carries the marker createJukeboxWorker looks for.
  void WORKFLOW_INTERCEPTORS_MARKER;
  return {
    // Temporal's first: the RunWorkflow span is the parent of invoke_agent, which is the parent of every
    // StartActivity span the agent schedules.
    inbound: [new OpenTelemetryInboundInterceptor(), new InvokeAgentInterceptor(usage)],
    outbound: [new OpenTelemetryOutboundInterceptor(), new UsageCountingInterceptor(usage)],
    internals: [new OpenTelemetryInternalsInterceptor()],
  };
};
