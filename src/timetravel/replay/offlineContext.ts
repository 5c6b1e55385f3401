/**
 * An AgentContext answered from a tape (a sibling of src/agent/directContext): each `ctx.llm` / `ctx.tool` is the
 * next recorded step, checked against the recorded request before its recorded response is handed back;
 * `ctx.random` / `ctx.now` are the recorded readings in order. No network, no Temporal, no API cost.
 */

import { type AgentContext, boothUnavailable } from '../../agent/context';
import { JukeboxError } from '../../errors/JukeboxError';
import { applyLayers, type OverrideLayer } from '../fork/overrides';
import { llmRequestForm } from '../fork/requestDigest';
import { asRecorded, differences, pick, sameValue } from './compare';
import { type Divergence, ReplayDivergenceError } from './errors';
import { plainClone } from './plainClone';
import type { Timeline, TimelineStep } from './timeline';

/** A step that failed in the recorded run fails the same way on replay, so the agent's own handling re-runs. */
export class ReplayedStepError extends JukeboxError {
  constructor(step: number, recorded: { name: string; message: string; code?: string }) {
    super(
      recorded.code ?? 'REPLAYED_STEP_FAILED',
      `step ${step} failed in the recorded run: ${recorded.message}`,
      {
        nonRetryable: true,
      },
    );
  }
}

export interface OfflineReplayState {
  /** Steps answered from the tape so far. */
  replayed: number;
  divergence: Divergence | null;
}

/**
 * Where the live value differs from the recorded one. The raw value is compared first: redacting it as the
 * recorder did walks every string through the secret patterns, and is only needed when something differs.
 */
function divergingFields(
  expected: unknown,
  live: unknown,
  known?: (expected: unknown, actual: unknown) => boolean,
): { fields: string[]; actual: unknown } {
  if (sameValue(expected, live, known)) return { fields: [], actual: live };
  const actual = asRecorded(live);
  return { fields: differences(expected, actual), actual };
}

export function createOfflineContext(timeline: Timeline): { ctx: AgentContext; state: OfflineReplayState } {
  const byStep = new Map<number, TimelineStep>(timeline.steps.map((s) => [s.step, s]));
  const header = timeline.tape.header;
  // A fork tape's later steps ran with the fork's overrides (and its ancestors'); replay applies the same.
  const layers = ((header.meta?.fork as { layers?: OverrideLayer[] } | undefined)?.layers ??
    []) as OverrideLayer[];
  const state: OfflineReplayState = { replayed: 0, divergence: null };
  // Live message objects already found equal to a recorded one. Agents resend the same message objects and the
  // timeline shares recorded ones across steps, so each step compares only its new messages, not the history.
  const verified = new WeakMap<object, unknown>();
  const known = (expected: unknown, live: unknown) =>
    typeof live === 'object' && live !== null && verified.get(live) === expected;
  let started = 0;
  let observed = 0;
  const endFrame = timeline.outcome?.frame ?? timeline.tape.frames.length - 1;

  const diverge = (d: Divergence): never => {
    state.divergence = d;
    throw new ReplayDivergenceError(timeline.file, d);
  };
  const next = (kind: 'llm' | 'tool', step: number, actual: unknown): TimelineStep => {
    const s = byStep.get(step);
    if (!s)
      return diverge({
        step,
        frame: endFrame,
        kind: 'end',
        fields: [`the tape has ${timeline.steps.length} steps; the agent started step ${step}`],
        expected: timeline.outcome ? { outcome: timeline.outcome.status } : { end: 'of tape' },
        actual: { [kind]: actual },
      });
    if (s.kind !== kind)
      return diverge({
        step,
        frame: s.requestFrame,
        kind: s.kind === 'llm' ? 'llm.request' : 'tool.call',
        fields: ['kind'],
        expected: {
          kind: s.kind,
          ...(s.kind === 'llm' ? { model: s.request?.model } : { tool: s.toolName }),
        },
        actual: { kind, ...(actual as Record<string, unknown>) },
      });
    return s;
  };
  const observe = (kind: 'random' | 'clock'): number => {
    const o = timeline.observations[observed];
    if (!o || o.kind !== kind)
      return diverge({
        step: started,
        frame: o?.frame ?? endFrame,
        kind: o?.kind ?? 'end',
        fields: [`observation ${observed}`],
        expected: o ? { [o.kind]: o.value } : { observations: timeline.observations.length },
        actual: { [kind]: 'read' },
      });
    observed++;
    return o.value;
  };

  const ctx: AgentContext = {
    get steps() {
      return started;
    },
    workflowId: header.workflowId,
    runId: header.runId,
    async llm(request) {
      const step = started++;
      const live = llmRequestForm(applyLayers(request, step, layers));
      const s = next('llm', step, { model: live.model });
      const expected = (s.request ?? {}) as unknown as Record<string, unknown>;
      const { fields, actual } = divergingFields(expected, live, known);
      if (fields.length)
        diverge({
          step,
          frame: s.requestFrame,
          kind: 'llm.request',
          fields,
          expected: pick(expected, fields),
          actual: pick(actual, fields),
        });
      const recorded = (expected.messages ?? []) as unknown[];
      (live.messages as unknown[]).forEach((m, i) => {
        if (typeof m === 'object' && m !== null) verified.set(m, recorded[i]);
      });
      state.replayed++;
      if (s.error || !s.response)
        throw new ReplayedStepError(step, s.error ?? { name: 'Error', message: 'no response recorded' });
      return plainClone(s.response);
    },
    async tool<T>(name: string, args: Record<string, unknown>) {
      const step = started++;
      const s = next('tool', step, { toolName: name, args });
      const expected = { toolName: s.toolName, args: s.args };
      const { fields, actual } = divergingFields(expected, { toolName: name, args });
      if (fields.length)
        diverge({
          step,
          frame: s.requestFrame,
          kind: 'tool.call',
          fields,
          expected: pick(expected, fields),
          actual: pick(actual, fields),
        });
      state.replayed++;
      if (s.error) throw new ReplayedStepError(step, s.error);
      return plainClone(s.output) as T;
    },
    random: () => observe('random'),
    now: () => observe('clock'),
    ...boothUnavailable('an offline replay'),
  };
  return { ctx, state };
}
