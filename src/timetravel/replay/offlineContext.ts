/**
 * An AgentContext answered from a tape (a sibling of src/agent/directContext): each `ctx.llm` / `ctx.tool` is the
 * next recorded step, checked against the recorded request before its recorded response is handed back;
 * `ctx.commit` / `ctx.rollback` are the recorded booth steps (src/timetravel/replay/boothReplay.ts);
 * `ctx.random` / `ctx.now` are the recorded readings in order. No network, no Temporal, no API cost.
 */

import { ApprovalRejectedError, ApprovalTimedOutError, approvalSubjectText } from '../../agent/approval';
import { gateNames } from '../../agent/commit';
import type { AgentContext } from '../../agent/context';
import type { Gate } from '../../booth/verifiers';
import { applyLayers, type OverrideLayer } from '../fork/overrides';
import { llmRequestForm } from '../fork/requestDigest';
import type { RecordedApproval } from './approvals';
import { answerBoothStep, boothRequestDivergence, verdictDivergence } from './boothReplay';
import type { BoothStep } from './boothSteps';
import { asRecorded, differences, pick, sameValue } from './compare';
import { type Divergence, ReplayDivergenceError, ReplayedStepError } from './errors';
import { plainClone } from './plainClone';
import { type Restaging, stagedDivergence } from './restaging';
import type { Timeline, TimelineStep } from './timeline';

export interface OfflineReplayOptions {
  /**
   * The project's gates by name. Each commit's recorded change set goes through the gates it named again, and
   * a verdict that differs from the recorded one is a divergence at the commit step. Without them the
   * recorded verdicts stand.
   */
  gates?: Readonly<Record<string, Gate>>;
  /**
   * The project's tools in a scratch booth (restaging.ts): each tool step runs again there, and each commit
   * compares what they staged with the recorded change set (then the gates judge the restaged one).
   */
  staging?: Restaging;
}

export interface OfflineReplayState {
  /** Steps answered from the tape so far. */
  replayed: number;
  divergence: Divergence | null;
  /** Commits whose change set the project's gates judged again. */
  gatesChecked: number;
  /** Commits whose change set the project's tools staged again and matched. */
  stagingChecked: number;
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

type Recorded = { kind: 'llm' | 'tool'; s: TimelineStep } | { kind: 'commit' | 'rollback'; s: BoothStep };

/** What a recorded step asked, for a divergence on the kind of step. */
function askedBy(r: Recorded): Record<string, unknown> {
  if (r.kind === 'llm' || r.kind === 'tool')
    return r.kind === 'llm'
      ? { kind: 'llm', model: r.s.request?.model }
      : { kind: 'tool', tool: r.s.toolName };
  const b = r.s as BoothStep;
  return b.kind === 'commit' ? { kind: 'commit', gates: b.gates } : { kind: 'rollback', reason: b.reason };
}

export function createOfflineContext(
  timeline: Timeline,
  options: OfflineReplayOptions = {},
): { ctx: AgentContext; state: OfflineReplayState } {
  const approvalsAt = new Map<number, RecordedApproval[]>();
  for (const a of timeline.approvals)
    if (a.kind !== 'commit') approvalsAt.set(a.step, [...(approvalsAt.get(a.step) ?? []), a]);
  const byStep = new Map<number, Recorded>();
  for (const s of timeline.steps) byStep.set(s.step, { kind: s.kind, s });
  for (const s of timeline.booth) byStep.set(s.step, { kind: s.kind, s });
  const total = byStep.size;
  const workflowSteps = new Set(timeline.workflowSteps);
  const header = timeline.tape.header;
  // A fork tape's later steps ran with the fork's overrides (and its ancestors'); replay applies the same.
  const layers = ((header.meta?.fork as { layers?: OverrideLayer[] } | undefined)?.layers ??
    []) as OverrideLayer[];
  const state: OfflineReplayState = { replayed: 0, divergence: null, gatesChecked: 0, stagingChecked: 0 };
  const staging = options.staging;
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
  // The next step number, past those the workflow took for itself (a breaker trip) where the agent did not.
  const nextStep = (): number => {
    while (workflowSteps.has(started)) started++;
    return started++;
  };
  function next(kind: 'llm' | 'tool', step: number, actual: unknown): TimelineStep;
  function next(kind: 'commit' | 'rollback', step: number, actual: unknown): BoothStep;
  function next(kind: Recorded['kind'], step: number, actual: unknown): TimelineStep | BoothStep {
    const r = byStep.get(step);
    if (!r)
      return diverge({
        step,
        frame: endFrame,
        kind: 'end',
        fields: [`the tape has ${total} steps; the agent started step ${step}`],
        expected: timeline.outcome ? { outcome: timeline.outcome.status } : { end: 'of tape' },
        actual: { [kind]: actual },
      });
    if (r.kind !== kind)
      return diverge({
        step,
        frame: r.s.requestFrame,
        kind: r.kind === 'llm' ? 'llm.request' : r.kind === 'tool' ? 'tool.call' : r.kind,
        fields: ['kind'],
        expected: askedBy(r),
        actual: { kind, ...(actual as Record<string, unknown>) },
      });
    return r.s;
  }
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

  /**
   * The step's tool and MCP approvals, as the person decided them: an approval lets the call go on (with the
   * arguments they edited), a rejection or a timeout throws what the agent caught live.
   */
  const answerToolApprovals = (
    step: number,
    name: string,
    args: Record<string, unknown>,
  ): Record<string, unknown> => {
    let sent = args;
    for (const a of approvalsAt.get(step) ?? []) {
      const asked = (a.subject as { args?: unknown } | undefined)?.args;
      if (a.kind === 'tool' && asked !== undefined) {
        const { fields, actual } = divergingFields(
          { toolName: name, args: asked },
          { toolName: name, args: sent },
        );
        if (fields.length)
          diverge({
            step,
            frame: a.requestFrame ?? a.decisionFrame ?? endFrame,
            kind: 'approval.request',
            fields,
            expected: pick({ args: asked }, fields),
            actual: pick(actual, fields),
          });
      }
      const o = a.outcome;
      if (!o)
        throw new ReplayedStepError(step, {
          name: 'Error',
          message: `the tape ends while step ${step} waits for approval ${a.id}`,
        });
      const what = approvalSubjectText(a.kind, a.subject);
      if (o.outcome === 'approved') {
        if (a.kind === 'tool' && o.args) sent = plainClone(o.args);
        continue;
      }
      state.replayed++;
      if (o.outcome === 'rejected') throw new ApprovalRejectedError(what, plainClone(o));
      throw new ApprovalTimedOutError(what, String(a.request?.timeout ?? ''), o.onTimeout);
    }
    return sent;
  };

  const ctx: AgentContext = {
    get steps() {
      return started;
    },
    workflowId: header.workflowId,
    runId: header.runId,
    async llm(request) {
      const step = nextStep();
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
      const step = nextStep();
      args = answerToolApprovals(step, name, args);
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
      if (staging?.has(name)) {
        const failed = await staging.toolStep(name, plainClone(args));
        if (failed !== null && !s.error)
          diverge({
            step,
            frame: s.requestFrame,
            kind: 'tool.restaged',
            fields: ['error'],
            expected: { error: null },
            actual: { error: `the tool's code failed in the replay's booth: ${failed}` },
          });
      }
      state.replayed++;
      if (s.error) throw new ReplayedStepError(step, s.error);
      return plainClone(s.output) as T;
    },
    random: () => observe('random'),
    now: () => observe('clock'),
    async commit(commitOptions = {}) {
      const step = nextStep();
      const request = { gates: gateNames(commitOptions) };
      const b = next('commit', step, request);
      const asked = boothRequestDivergence(b, request);
      if (asked) diverge(asked);
      // What today's tools staged, when they ran again; else the change set the recording's gates judged.
      let changes = b.changes;
      if (staging && b.changes) {
        changes = await staging.changeSet();
        await staging.settle();
        const restaged = stagedDivergence(b, changes);
        if (restaged) diverge(restaged);
        state.stagingChecked++;
      }
      if (options.gates) {
        const judged = await verdictDivergence(b, options.gates, changes);
        if (changes) state.gatesChecked++;
        if (judged) diverge(judged);
      }
      state.replayed++;
      return answerBoothStep(b) as Awaited<ReturnType<AgentContext['commit']>>;
    },
    async rollback(reason) {
      const step = nextStep();
      const b = next('rollback', step, { reason });
      const asked = boothRequestDivergence(b, { reason });
      if (asked) diverge(asked);
      await staging?.settle();
      state.replayed++;
      return answerBoothStep(b) as Awaited<ReturnType<AgentContext['rollback']>>;
    },
  };
  return { ctx, state };
}
