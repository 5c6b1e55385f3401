import { crossRealmError, JukeboxError } from '../errors';

/** No endpoint can serve this provider: neither an API key nor a local model server is configured. */
export class LlmEndpointMissingError extends JukeboxError {
  constructor(provider: string) {
    const key = provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
    super(
      'LLM_ENDPOINT_MISSING',
      `No ${provider} endpoint is configured. Set ${key} to use the real API, or JUKEBOX_MODEL_URL to the local ` +
        'model server (npm run quickstart starts one), then restart the worker.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('LlmEndpointMissingError', LlmEndpointMissingError);

/** The model API answered with an error. 4xx other than 408/409/429 cannot be fixed by retrying. */
export class LlmCallError extends JukeboxError {
  readonly status: number | undefined;
  constructor(provider: string, model: string, status: number | undefined, detail: string, cause?: unknown) {
    const retryable =
      status === undefined || status >= 500 || status === 408 || status === 409 || status === 429;
    super(
      'LLM_CALL_FAILED',
      `${provider} model ${model} failed${status ? ` with HTTP ${status}` : ''}: ${detail}` +
        (retryable ? ' (will be retried)' : ' (not retried: fix the request or the model script)'),
      { cause, nonRetryable: !retryable },
    );
    this.status = status;
  }
}
crossRealmError('LlmCallError', LlmCallError);

/** The model sent tool-call arguments that are not a JSON object. */
export class LlmToolArgumentsError extends JukeboxError {
  constructor(provider: string, toolName: string, raw: string, cause?: unknown) {
    super(
      'LLM_TOOL_ARGUMENTS_INVALID',
      `${provider} returned arguments for tool ${toolName} that are not a JSON object: ${raw.slice(0, 200)}`,
      { cause, nonRetryable: false },
    );
  }
}
crossRealmError('LlmToolArgumentsError', LlmToolArgumentsError);
