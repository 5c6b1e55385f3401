/**
 * The live half of GenAI telemetry: around each llm step a `chat {model}` client span, around each tool step
 * an `execute_tool {tool}` span, both children of Temporal's RunActivity span (the active context Temporal's
 * activity interceptor set), plus the two client metrics. It reads the step's input and result, so the
 * activities themselves stay unaware of telemetry.
 */
import { type Attributes, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Context as ActivityContext } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { LlmResponse } from '../../llm/types';
import { chatContentAttributes, toolContentAttributes } from '../../telemetry/content';
import {
  ATTR,
  chatSpanName,
  LLM_STEP_ACTIVITY,
  TOOL_STEP_ACTIVITY,
  toolSpanName,
} from '../../telemetry/conventions';
import {
  chatRequestAttributes,
  chatResponseAttributes,
  errorType,
  stepAttributes,
  toolAttributes,
} from '../../telemetry/genAiAttributes';
import type { LiveTelemetry } from '../../telemetry/liveTelemetry';
import type { LlmStepInput, ToolStepInput } from '../activities/stepActivities';

type ExecuteNext = Next<ActivityInboundCallsInterceptor, 'execute'>;

export class GenAiActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly telemetry: LiveTelemetry,
    private readonly ctx: ActivityContext,
  ) {}

  execute(input: ActivityExecuteInput, next: ExecuteNext): Promise<unknown> {
    const type = this.ctx.info.activityType;
    if (type === LLM_STEP_ACTIVITY) return this.chat(input, next);
    if (type === TOOL_STEP_ACTIVITY) return this.tool(input, next);
    return next(input);
  }

  private stepAttributes(step: number): Attributes {
    const info = this.ctx.info;
    return stepAttributes({
      step,
      attempt: info.attempt,
      activityId: info.activityId,
      workflowId: info.workflowExecution?.workflowId,
    });
  }

  private async chat(input: ActivityExecuteInput, next: ExecuteNext): Promise<unknown> {
    const arg = input.args[0] as LlmStepInput | undefined;
    const request = arg?.request;
    if (!request) return next(input);
    const attributes = {
      ...chatRequestAttributes(request),
      ...this.stepAttributes(arg.step),
    };
    const { tracer, captureContent, redactor } = this.telemetry;
    return tracer.startActiveSpan(
      chatSpanName(request.model),
      { kind: SpanKind.CLIENT, attributes },
      async (span) => {
        const started = performance.now();
        try {
          const response = (await next(input)) as LlmResponse;
          span.setAttributes(chatResponseAttributes(response));
          if (captureContent)
            span.setAttributes(
              chatContentAttributes(
                {
                  system: request.system,
                  messages: request.messages,
                  output: {
                    text: response.text,
                    toolCalls: response.toolCalls,
                    finishReason: response.finishReason,
                  },
                },
                redactor,
              ),
            );
          span.setStatus({ code: SpanStatusCode.OK });
          this.telemetry.recordChat(
            { ...attributes, [ATTR.responseModel]: response.model },
            started,
            response.usage,
          );
          return response;
        } catch (err) {
          if (captureContent)
            span.setAttributes(
              chatContentAttributes({ system: request.system, messages: request.messages }, redactor),
            );
          this.fail(span, err);
          this.telemetry.recordChat({ ...attributes, [ATTR.errorType]: errorType(err) }, started);
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  private async tool(input: ActivityExecuteInput, next: ExecuteNext): Promise<unknown> {
    const arg = input.args[0] as ToolStepInput | undefined;
    if (!arg?.name) return next(input);
    const attributes = {
      ...toolAttributes(arg.name, this.ctx.info.activityId),
      ...this.stepAttributes(arg.step),
    };
    const { tracer, captureContent, redactor } = this.telemetry;
    return tracer.startActiveSpan(
      toolSpanName(arg.name),
      { kind: SpanKind.INTERNAL, attributes },
      async (span) => {
        try {
          const result = await next(input);
          if (captureContent) span.setAttributes(toolContentAttributes(arg.args, result, redactor));
          span.setStatus({ code: SpanStatusCode.OK });
          return result;
        } catch (err) {
          if (captureContent) span.setAttributes(toolContentAttributes(arg.args, undefined, redactor));
          this.fail(span, err);
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  private fail(span: Span, err: unknown): void {
    span.setAttribute(ATTR.errorType, errorType(err));
    const message = this.telemetry.redactor.redactString(err instanceof Error ? err.message : String(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
}
