/**
 * GenAI span attributes from a model call or tool call, in one place for both producers: the live activity
 * interceptor (from LlmRequest / LlmResponse) and the tape exporter (from llm.request / llm.response frames).
 */
import type { Attributes } from '@opentelemetry/api';
import { ATTR, OPERATION } from './conventions';

export interface ChatRequestFacts {
  provider: string;
  model: string;
  temperature?: number;
  maxTokens?: number;
}

export interface ChatResponseFacts {
  id?: string;
  model?: string;
  finishReason?: string;
  usage?: { inputTokens?: number; outputTokens?: number };
  cost?: number | null;
}

export interface StepFacts {
  step: number;
  attempt?: number;
  activityId?: string;
  workflowId?: string;
  runId?: string;
}

export function stepAttributes(s: StepFacts): Attributes {
  const a: Attributes = { [ATTR.step]: s.step };
  if (s.attempt !== undefined) a[ATTR.attempt] = s.attempt;
  if (s.activityId !== undefined) a[ATTR.activityId] = s.activityId;
  if (s.workflowId) a[ATTR.conversationId] = s.workflowId;
  return a;
}

export function chatRequestAttributes(r: ChatRequestFacts): Attributes {
  const a: Attributes = {
    [ATTR.operationName]: OPERATION.chat,
    [ATTR.providerName]: r.provider,
    [ATTR.requestModel]: r.model,
    [ATTR.outputType]: 'text',
  };
  if (typeof r.temperature === 'number') a[ATTR.requestTemperature] = r.temperature;
  if (typeof r.maxTokens === 'number') a[ATTR.requestMaxTokens] = r.maxTokens;
  return a;
}

export function chatResponseAttributes(r: ChatResponseFacts): Attributes {
  const a: Attributes = {};
  if (r.id) a[ATTR.responseId] = r.id;
  if (r.model) a[ATTR.responseModel] = r.model;
  if (r.finishReason) a[ATTR.responseFinishReasons] = [r.finishReason];
  if (typeof r.usage?.inputTokens === 'number') a[ATTR.usageInputTokens] = r.usage.inputTokens;
  if (typeof r.usage?.outputTokens === 'number') a[ATTR.usageOutputTokens] = r.usage.outputTokens;
  if (typeof r.cost === 'number') a[ATTR.cost] = r.cost;
  return a;
}

export function toolAttributes(toolName: string, callId: string | undefined): Attributes {
  const a: Attributes = {
    [ATTR.operationName]: OPERATION.executeTool,
    [ATTR.toolName]: toolName,
    [ATTR.toolType]: 'function',
  };
  if (callId) a[ATTR.toolCallId] = callId;
  return a;
}

export function agentAttributes(agentName: string, workflowId: string, runId: string): Attributes {
  return {
    [ATTR.operationName]: OPERATION.invokeAgent,
    [ATTR.agentName]: agentName,
    [ATTR.agentId]: `${workflowId}/${runId}`,
    [ATTR.conversationId]: workflowId,
    [ATTR.workflowId]: workflowId,
    [ATTR.runId]: runId,
  };
}

/** The attributes the two client metrics are recorded with: low cardinality, per the conventions. */
export function metricAttributes(span: Attributes): Attributes {
  const a: Attributes = {};
  for (const k of [
    ATTR.operationName,
    ATTR.providerName,
    ATTR.requestModel,
    ATTR.responseModel,
    ATTR.errorType,
  ])
    if (span[k] !== undefined) a[k] = span[k];
  return a;
}

/** `error.type`: the error's stable code when it has one, else its class name. */
export function errorType(err: unknown): string {
  const e = err as { code?: unknown; type?: unknown; name?: unknown } | null;
  if (e && typeof e.code === 'string' && e.code) return e.code;
  if (e && typeof e.type === 'string' && e.type) return e.type;
  if (e && typeof e.name === 'string' && e.name) return e.name;
  return '_OTHER';
}
