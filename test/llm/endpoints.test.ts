import { describe, expect, it } from 'vitest';
import { endpointsFromEnv, LlmEndpointMissingError, requireEndpoint } from '../../src/llm';

describe('endpoint resolution', () => {
  it('sends requests to the real API when an API key is set', () => {
    const e = endpointsFromEnv({ OPENAI_API_KEY: 'sk-live', JUKEBOX_MODEL_URL: 'http://127.0.0.1:9' });
    expect(e.openai).toMatchObject({ baseURL: undefined, apiKey: 'sk-live' });
    expect(e.anthropic).toMatchObject({ baseURL: 'http://127.0.0.1:9' });
  });

  it('uses the local model server when no key is set', () => {
    const e = endpointsFromEnv({ JUKEBOX_MODEL_URL: 'http://127.0.0.1:9/' });
    expect(e.openai?.baseURL).toBe('http://127.0.0.1:9/v1');
    expect(e.anthropic?.baseURL).toBe('http://127.0.0.1:9');
  });

  it('lets an explicit base URL win over the key', () => {
    const e = endpointsFromEnv({ ANTHROPIC_API_KEY: 'k', JUKEBOX_ANTHROPIC_BASE_URL: 'http://proxy:1' });
    expect(e.anthropic).toMatchObject({ baseURL: 'http://proxy:1', apiKey: 'k' });
  });

  it('names both fixes when nothing is configured', () => {
    const e = endpointsFromEnv({});
    expect(() => requireEndpoint(e, 'anthropic')).toThrow(LlmEndpointMissingError);
    expect(() => requireEndpoint(e, 'anthropic')).toThrow(/ANTHROPIC_API_KEY.*JUKEBOX_MODEL_URL/);
  });
});
