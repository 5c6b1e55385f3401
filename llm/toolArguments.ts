import { LlmToolArgumentsError } from './errors';

export function parseToolArguments(provider: string, toolName: string, raw: string): Record<string, unknown> {
  if (raw.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new LlmToolArgumentsError(provider, toolName, raw, err);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new LlmToolArgumentsError(provider, toolName, raw);
  return parsed as Record<string, unknown>;
}
