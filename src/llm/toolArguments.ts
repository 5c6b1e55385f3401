import { LlmToolArgumentsError } from './errors';
import type { ToolCall } from './types';

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

/** Streamed tool calls arrive as pieces keyed by position; this puts them back in order and parses them. */
export function assembleToolCalls(
  provider: string,
  pieces: ReadonlyMap<number, { id: string; name: string; args: string }>,
): ToolCall[] {
  return [...pieces.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, c]) => ({ id: c.id, name: c.name, arguments: parseToolArguments(provider, c.name, c.args) }));
}
