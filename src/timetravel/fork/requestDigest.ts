/**
 * A digest of a step's request that the fork workflow can compute itself (pure, deterministic, no Node APIs):
 * an inherited step whose request digests the same as the parent's is answered in the workflow, with no
 * activity; any difference falls back to the step activity, which compares field by field (after redaction)
 * and fails with ForkDivergenceError if the request really changed.
 */
import type { LlmRequest } from '../../llm/types';

function canonical(v: unknown): string {
  if (v === undefined) return 'null';
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? 'null' : canonical(x))).join(',')}]`;
  const keys = Object.keys(v as Record<string, unknown>)
    .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
}

/** Two 32-bit FNV-1a lanes over the canonical JSON: a fast equality check, not a security boundary. */
export function digest(v: unknown): string {
  const s = canonical(v);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return `${a.toString(16)}.${b.toString(16)}.${s.length}`;
}

/** The fields of an llm request a tape records (src/recorder/activityTape.ts, llmRequest). */
export function llmRequestForm(r: LlmRequest | Record<string, unknown>): Record<string, unknown> {
  const q = r as Record<string, unknown>;
  const out: Record<string, unknown> = { provider: q.provider, model: q.model, messages: q.messages ?? [] };
  for (const k of ['system', 'temperature', 'maxTokens', 'stream']) if (q[k] !== undefined) out[k] = q[k];
  if (Array.isArray(q.tools) && q.tools.length) out.tools = q.tools;
  return out;
}

export function toolCallForm(toolName: string, args: unknown): Record<string, unknown> {
  return { toolName, args };
}
