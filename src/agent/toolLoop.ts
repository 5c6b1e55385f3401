import { crossRealmError, JukeboxError } from '../errors/JukeboxError';
import type { ChatMessage, LlmRequest, Provider, ToolSpec } from '../llm/types';
import type { AgentContext } from './context';

export class AgentTurnLimitError extends JukeboxError {
  constructor(maxTurns: number) {
    super(
      'AGENT_TURN_LIMIT',
      `The model was still calling tools after ${maxTurns} turns; raise maxTurns or look for a loop in the prompt.`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('AgentTurnLimitError', AgentTurnLimitError);

export interface ToolLoopOptions {
  provider: Provider;
  model: string;
  system?: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** Model calls allowed before giving up: an agent that never stops calling tools must not run forever. */
  maxTurns?: number;
  temperature?: number;
}

export interface ToolLoopResult {
  text: string;
  messages: ChatMessage[];
  turns: number;
}

/** The classic agent loop: call the model, run the tools it asks for, feed results back, until it answers. */
export async function runToolLoop(ctx: AgentContext, options: ToolLoopOptions): Promise<ToolLoopResult> {
  const messages = [...options.messages];
  const maxTurns = options.maxTurns ?? 25;
  for (let turn = 1; turn <= maxTurns; turn++) {
    const request: LlmRequest = {
      provider: options.provider,
      model: options.model,
      system: options.system,
      messages,
      tools: options.tools,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    };
    const response = await ctx.llm(request);
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
    if (response.toolCalls.length === 0) return { text: response.text, messages, turns: turn };
    for (const call of response.toolCalls) {
      const result = await ctx.tool(call.name, call.arguments);
      messages.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: typeof result === 'string' ? result : JSON.stringify(result),
      });
    }
  }
  throw new AgentTurnLimitError(maxTurns);
}
