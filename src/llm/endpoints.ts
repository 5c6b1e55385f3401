import { LlmEndpointMissingError } from './errors';
import type { Provider } from './types';

export interface Endpoint {
  /** undefined means the SDK's own default, i.e. the real API. */
  baseURL: string | undefined;
  apiKey: string;
  /** Where requests go, for logs: never includes the key. */
  describe: string;
}

export type LlmEndpoints = Partial<Record<Provider, Endpoint>>;

/**
 * Resolves endpoints from the environment. An explicit base URL wins; then a real API key (the same agent code
 * then talks to the real API); then the local model server named by JUKEBOX_MODEL_URL.
 */
export function endpointsFromEnv(env: NodeJS.ProcessEnv = process.env): LlmEndpoints {
  const local = env.JUKEBOX_MODEL_URL?.replace(/\/+$/, '');
  const endpoints: LlmEndpoints = {};
  const openai = pick(
    env.JUKEBOX_OPENAI_BASE_URL,
    env.OPENAI_API_KEY,
    local && `${local}/v1`,
    'api.openai.com',
  );
  if (openai) endpoints.openai = openai;
  const anthropic = pick(env.JUKEBOX_ANTHROPIC_BASE_URL, env.ANTHROPIC_API_KEY, local, 'api.anthropic.com');
  if (anthropic) endpoints.anthropic = anthropic;
  return endpoints;
}

function pick(
  explicitBase: string | undefined,
  apiKey: string | undefined,
  localBase: string | undefined | '',
  realHost: string,
): Endpoint | undefined {
  if (explicitBase) return { baseURL: explicitBase, apiKey: apiKey ?? 'local', describe: explicitBase };
  if (apiKey) return { baseURL: undefined, apiKey, describe: realHost };
  if (localBase) return { baseURL: localBase, apiKey: 'local', describe: localBase };
  return undefined;
}

/** Endpoints that point every provider at one local model server. */
export function localEndpoints(modelServerUrl: string): LlmEndpoints {
  const base = modelServerUrl.replace(/\/+$/, '');
  return {
    openai: { baseURL: `${base}/v1`, apiKey: 'local', describe: `${base}/v1` },
    anthropic: { baseURL: base, apiKey: 'local', describe: base },
  };
}

export function requireEndpoint(endpoints: LlmEndpoints, provider: Provider): Endpoint {
  const endpoint = endpoints[provider];
  if (!endpoint) throw new LlmEndpointMissingError(provider);
  return endpoint;
}
