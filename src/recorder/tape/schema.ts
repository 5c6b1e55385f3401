/**
 * The checks every frame payload gets regardless of kind: it is a map, and its Temporal identity fields have
 * the right types (and are present on activity frames, whose replay is keyed by them).
 */
import { ACTIVITY_KINDS, type FrameKind } from './kinds';

/** The identity fields a payload may carry; FORMAT.md "Payload schemas" says which kind needs which. */
export interface TemporalIdentity {
  workflowId?: string;
  runId?: string;
  activityId?: string;
  /** Temporal's attempt number, 1-based. */
  attempt?: number;
}

export function payloadProblem(kind: FrameKind, payload: unknown): string | undefined {
  if (
    typeof payload !== 'object' ||
    payload === null ||
    Array.isArray(payload) ||
    payload instanceof Uint8Array
  ) {
    return `a ${kind} payload must be a map`;
  }
  const p = payload as Record<string, unknown>;
  for (const f of ['workflowId', 'runId', 'activityId'] as const) {
    if (p[f] !== undefined && typeof p[f] !== 'string') return `${kind} payload field ${f} must be a string`;
  }
  const a = p.attempt;
  if (a !== undefined && !(typeof a === 'number' && Number.isInteger(a) && a >= 1 && a <= 0xffffffff)) {
    return `${kind} payload field attempt must be an integer >= 1`;
  }
  if (ACTIVITY_KINDS.has(kind) && (p.activityId === undefined || a === undefined)) {
    return `a ${kind} payload must carry activityId and attempt`;
  }
  return undefined;
}
