/**
 * The OpenTelemetry GenAI semantic conventions Jukebox emits, pinned to one release because they are still in
 * development and rename things between releases (1.37.0 replaced `gen_ai.system` by `gen_ai.provider.name`
 * and message events by the `gen_ai.input.messages` / `gen_ai.output.messages` attributes). Live spans and
 * spans exported from tapes share these names, so a backend sees one vocabulary. No imports: the workflow
 * bundle includes this file.
 */
export const GENAI_SEMCONV_VERSION = '1.37.0';
export const GENAI_SCHEMA_URL = `https://opentelemetry.io/schemas/${GENAI_SEMCONV_VERSION}`;
export const INSTRUMENTATION_NAME = 'jukebox';

export const ATTR = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  requestTemperature: 'gen_ai.request.temperature',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  responseId: 'gen_ai.response.id',
  responseModel: 'gen_ai.response.model',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  tokenType: 'gen_ai.token.type',
  outputType: 'gen_ai.output.type',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
  agentName: 'gen_ai.agent.name',
  agentId: 'gen_ai.agent.id',
  conversationId: 'gen_ai.conversation.id',
  errorType: 'error.type',
  // Jukebox's own: where the step sits in its run and on its tape.
  step: 'jukebox.step',
  attempt: 'jukebox.attempt',
  activityId: 'jukebox.activity_id',
  workflowId: 'jukebox.workflow_id',
  runId: 'jukebox.run_id',
  tapeId: 'jukebox.tape_id',
  cost: 'jukebox.cost_usd',
} as const;

export const OPERATION = { chat: 'chat', executeTool: 'execute_tool', invokeAgent: 'invoke_agent' } as const;

export const METRIC = {
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
} as const;

/** Bucket boundaries the conventions recommend for the two client histograms. */
export const TOKEN_USAGE_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
export const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

export const chatSpanName = (model: string) => `${OPERATION.chat} ${model}`;
export const toolSpanName = (tool: string) => `${OPERATION.executeTool} ${tool}`;
export const agentSpanName = (agent: string) => `${OPERATION.invokeAgent} ${agent}`;

/** The activity types behind ctx.llm and ctx.tool (src/temporal/activities/stepActivities.ts). */
export const LLM_STEP_ACTIVITY = 'llmStep';
export const TOOL_STEP_ACTIVITY = 'toolStep';

/** A string the workflow interceptors module carries into a bundle: its presence says spans will flow. */
export const WORKFLOW_INTERCEPTORS_MARKER = 'jukebox-telemetry-workflow-interceptors';

/** The span event of a person's approval: asked, decided or timed out (docs/approvals.md). */
export const APPROVAL_EVENT = 'jukebox.approval';
