/** Provider-neutral model calls over the official openai and @anthropic-ai/sdk clients. */
export type { CallOptions } from './callOptions';
export {
  type Endpoint,
  endpointsFromEnv,
  type LlmEndpoints,
  localEndpoints,
  requireEndpoint,
} from './endpoints';
export { LlmCallError, LlmEndpointMissingError, LlmToolArgumentsError } from './errors';
export { LlmClient } from './llmClient';
export type * from './types';
