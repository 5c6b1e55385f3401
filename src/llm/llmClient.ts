import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { anthropicClient, callAnthropic } from './anthropicProvider';
import type { CallOptions } from './callOptions';
import { type LlmEndpoints, requireEndpoint } from './endpoints';
import { callOpenAI, openaiClient } from './openaiProvider';
import type { LlmRequest, LlmResponse } from './types';

/** One place that turns a neutral request into an SDK call; SDK clients are made once per process. */
export class LlmClient {
  private openai: OpenAI | undefined;
  private anthropic: Anthropic | undefined;

  constructor(private readonly endpoints: LlmEndpoints) {}

  call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    if (request.provider === 'anthropic') {
      this.anthropic ??= anthropicClient(requireEndpoint(this.endpoints, 'anthropic'));
      return callAnthropic(this.anthropic, request, options);
    }
    this.openai ??= openaiClient(requireEndpoint(this.endpoints, 'openai'));
    return callOpenAI(this.openai, request, options);
  }
}
