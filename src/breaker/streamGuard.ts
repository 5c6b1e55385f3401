import type { ModelPrice } from '../llm/pricing';
import type { LlmRequest, StreamChunk } from '../llm/types';
import { type BreakerTrip, formatUsd } from './trip';

/** What the workflow tells an llm step about its track's budget: the cost cap checked chunk by chunk. */
export interface StreamBudget {
  track: string;
  /** USD the track had spent before this step. */
  spentUsd: number;
  capUsd: number;
}

// The same rough rule as the local model server: about four characters a token. Real usage replaces it when
// the provider reports usage (the last chunk of an OpenAI stream with include_usage, Anthropic message_delta).
const tokensOf = (chars: number) => Math.ceil(chars / 4);

function requestChars(request: LlmRequest): number {
  let n = request.system?.length ?? 0;
  for (const m of request.messages) {
    n += m.content.length;
    if (m.role === 'assistant' && m.toolCalls) n += JSON.stringify(m.toolCalls).length;
  }
  if (request.tools) n += JSON.stringify(request.tools).length;
  return n;
}

type Raw = Record<string, unknown> | undefined;

/** Characters of a non-text chunk that the model is billed for: tool-call argument pieces. */
function rawOutputChars(raw: unknown): number {
  const r = raw as Raw;
  const openaiCalls = (
    r?.choices as
      | { delta?: { tool_calls?: { function?: { arguments?: string; name?: string } }[] } }[]
      | undefined
  )?.[0]?.delta?.tool_calls;
  if (openaiCalls)
    return openaiCalls.reduce(
      (n, c) => n + (c.function?.arguments?.length ?? 0) + (c.function?.name?.length ?? 0),
      0,
    );
  const partial = (r?.delta as { partial_json?: string } | undefined)?.partial_json;
  return typeof partial === 'string' ? partial.length : 0;
}

function reportedUsage(raw: unknown): { input?: number; output?: number } | undefined {
  const r = raw as Raw;
  const u = r?.usage as
    | { prompt_tokens?: number; completion_tokens?: number; input_tokens?: number; output_tokens?: number }
    | null
    | undefined;
  if (u && typeof u === 'object')
    return { input: u.prompt_tokens ?? u.input_tokens, output: u.completion_tokens ?? u.output_tokens };
  const m = (r?.message as { usage?: { input_tokens?: number } } | undefined)?.usage;
  if (m) return { input: m.input_tokens };
  return undefined;
}

/**
 * The cost cap inside the stream: counts the prompt when the step starts and every streamed piece as it
 * arrives, priced by the model's price, and reports a trip the moment the track's spend passes the cap, so the
 * caller can cancel the stream instead of paying for the rest of it.
 */
export class StreamGuard {
  private inputTokens: number;
  private outputChars = 0;
  private reportedOutput: number | undefined;
  tripped: BreakerTrip | undefined;

  constructor(
    readonly budget: StreamBudget,
    private readonly price: ModelPrice,
    request: LlmRequest,
  ) {
    this.inputTokens = tokensOf(requestChars(request));
  }

  /** USD of this step so far. */
  stepUsd(): number {
    const output = this.reportedOutput ?? tokensOf(this.outputChars);
    return (this.inputTokens * this.price.inputPerMTok + output * this.price.outputPerMTok) / 1e6;
  }

  /** Call before the request goes out: a prompt alone can pass the cap. */
  check(): BreakerTrip | undefined {
    const total = this.budget.spentUsd + this.stepUsd();
    if (total <= this.budget.capUsd) return undefined;
    this.tripped = {
      detector: 'cost-cap',
      track: this.budget.track,
      reason: `spend reached $${formatUsd(total)} mid-stream, over the cap of $${this.budget.capUsd}; stream cancelled`,
      evidence: {
        capUsd: this.budget.capUsd,
        spentBeforeStepUsd: this.budget.spentUsd,
        stepUsd: this.stepUsd(),
        inputTokens: this.inputTokens,
        streamedOutputTokens: this.reportedOutput ?? tokensOf(this.outputChars),
        estimated: this.reportedOutput === undefined,
      },
      spendUsd: total,
    };
    return this.tripped;
  }

  onChunk(chunk: StreamChunk): BreakerTrip | undefined {
    this.outputChars += chunk.text?.length ?? rawOutputChars(chunk.raw);
    const usage = reportedUsage(chunk.raw);
    if (usage?.input !== undefined) this.inputTokens = usage.input;
    if (usage?.output !== undefined) this.reportedOutput = usage.output;
    return this.check();
  }
}
