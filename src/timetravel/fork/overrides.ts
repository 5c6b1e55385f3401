/**
 * What a fork changes from its fork step on. Pure data and a pure function: the fork workflow applies it to
 * each request inside the workflow sandbox, and offline replay of a fork tape applies the same to reproduce it.
 */
import type { LlmRequest, Provider } from '../../llm/types';

export interface ForkOverrides {
  provider?: Provider;
  model?: string;
  /** Replaces the system prompt. */
  system?: string;
  /** Request fields set by dotted path (`temperature`, `maxTokens`, `messages.0.content`), values as parsed JSON. */
  set?: Record<string, unknown>;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur: Record<string, unknown> = target;
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1) {
      cur[part] = value;
      return;
    }
    const next = cur[part];
    const copy = Array.isArray(next)
      ? [...next]
      : typeof next === 'object' && next !== null
        ? { ...(next as Record<string, unknown>) }
        : {};
    cur[part] = copy;
    cur = copy as Record<string, unknown>;
  }
}

/** A copy of the request with the overrides applied; the agent's own request object is left alone. */
export function applyOverrides(request: LlmRequest, overrides: ForkOverrides | undefined): LlmRequest {
  if (!overrides) return request;
  const out = { ...request } as unknown as Record<string, unknown>;
  if (overrides.provider !== undefined) out.provider = overrides.provider;
  if (overrides.model !== undefined) out.model = overrides.model;
  if (overrides.system !== undefined) out.system = overrides.system;
  for (const [path, value] of Object.entries(overrides.set ?? {})) setPath(out, path, value);
  return out as unknown as LlmRequest;
}

/** Overrides that apply from one step on. A fork of a fork carries its ancestors' layers, then its own. */
export interface OverrideLayer {
  fromStep: number;
  overrides: ForkOverrides;
}

/** The request as a fork (with these layers) sends it at `step`. */
export function applyLayers(
  request: LlmRequest,
  step: number,
  layers: readonly OverrideLayer[] | undefined,
): LlmRequest {
  let out = request;
  for (const layer of layers ?? []) if (step >= layer.fromStep) out = applyOverrides(out, layer.overrides);
  return out;
}
