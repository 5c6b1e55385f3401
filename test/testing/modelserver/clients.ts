import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ModelServer } from '../../../src/testing/modelserver';

/** The official clients, pointed at the local server exactly as the worker points them. */
export const openaiFor = (server: ModelServer, maxRetries = 0) =>
  new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'test', maxRetries });

export const anthropicFor = (server: ModelServer, maxRetries = 0) =>
  new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', maxRetries });

export const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

export const ANTHROPIC_WEATHER_TOOL = {
  name: 'get_weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
};

/** Parses a raw fetch response body as the shape the test expects. */
export const jsonOf = async <T>(res: Response): Promise<T> => (await res.json()) as T;

export type ErrorBody = { error: { message: string; code?: string } };
