/**
 * Offline replay: re-executes the agent's code in this process with every step answered from the tape, and
 * audits it: each request is compared with the recorded one, then the output with the recorded outcome.
 */

import type { AgentDefinition } from '../../agent/context';
import type { Gate } from '../../booth/verifiers';
import type { Tape } from '../../recorder/tape';
import { asRecorded, differences, pick, sameValue } from './compare';
import { type Divergence, ReplayDivergenceError, TapeNotReplayableError } from './errors';
import { createOfflineContext } from './offlineContext';
import { plainClone } from './plainClone';
import type { Restaging } from './restaging';
import { readTimeline, type Timeline } from './timeline';

export interface ReplayReport {
  file: string;
  workflowType: string;
  /** The agent's steps on the tape (model and tool calls, commits and rollbacks), and how many the replay answered. */
  steps: number;
  replayed: number;
  /** Commits whose recorded change set the project's gates judged again (0 without `gates`). */
  gatesChecked: number;
  /** Commits whose change set the project's tools staged again in a scratch booth and matched (0 without `staging`). */
  stagingChecked: number;
  /** `match`: every step and the outcome agree. `diverged`: see divergence. `incomplete`: the tape is unsealed and every step it holds agreed. */
  status: 'match' | 'diverged' | 'incomplete';
  divergence: Divergence | null;
  recordedOutcome: string | null;
  replayedOutcome: 'completed' | 'failed';
  output?: unknown;
  error?: string;
  durationMs: number;
}

export interface ReplayOptions<I = unknown, O = unknown> {
  /**
   * The agent to run (typed as `defineAgent` made it: its input is the tape's recorded run input, which the
   * replay passes as it was recorded); when absent the caller located it from the header (agentLocator).
   */
  agent: AgentDefinition<I, O>;
  /** Read tape (benchmarks replay one tape many times without re-reading it). */
  timeline?: Timeline;
  /** The project's gates, to judge each commit's recorded change set again (OfflineReplayOptions.gates). */
  gates?: Readonly<Record<string, Gate>>;
  /** The project's tools in a scratch booth, to stage each tool step again (OfflineReplayOptions.staging). */
  staging?: Restaging;
}

export async function replayTape<I = unknown, O = unknown>(
  input: string | Tape,
  options: ReplayOptions<I, O>,
): Promise<ReplayReport> {
  const t0 = performance.now();
  const timeline = options.timeline ?? readTimeline(input);
  const file = timeline.file;
  if (!timeline.input.present && timeline.steps.length > 0)
    throw new TapeNotReplayableError(
      file,
      'it does not hold the run input (recorded on the first step since the replay feature; older tapes lack it)',
    );
  const { ctx, state } = createOfflineContext(timeline, {
    ...(options.gates ? { gates: options.gates } : {}),
    ...(options.staging ? { staging: options.staging } : {}),
  });
  const report: ReplayReport = {
    file,
    workflowType: timeline.tape.header.workflowType,
    steps: timeline.steps.length + timeline.booth.length,
    replayed: 0,
    gatesChecked: 0,
    stagingChecked: 0,
    status: 'match',
    divergence: null,
    recordedOutcome: timeline.outcome?.status ?? null,
    replayedOutcome: 'completed',
    durationMs: 0,
  };
  try {
    report.output = await options.agent.run(ctx, plainClone(timeline.input.value) as I);
  } catch (err) {
    if (err instanceof ReplayDivergenceError) report.divergence = err.divergence;
    report.replayedOutcome = 'failed';
    report.error = err instanceof Error ? err.message : String(err);
  }
  // A divergence the agent's code caught (an agent that catches every typed error) is still the first one.
  if (state.divergence && !report.divergence) report.divergence = state.divergence;
  report.replayed = state.replayed;
  report.gatesChecked = state.gatesChecked;
  report.stagingChecked = state.stagingChecked;
  if (!report.divergence) report.divergence = outcomeDivergence(timeline, report, ctx.steps);
  report.status = report.divergence ? 'diverged' : timeline.outcome ? 'match' : 'incomplete';
  report.durationMs = performance.now() - t0;
  return report;
}

const recordedResults = new WeakMap<Timeline, unknown>();

/** The recorded result in tape form, once per timeline (a timeline replayed many times normalises it once). */
function recordedResult(t: Timeline): unknown {
  if (!recordedResults.has(t)) recordedResults.set(t, asRecorded(t.outcome?.result) ?? null);
  return recordedResults.get(t);
}

/** The first recorded agent step numbered `from` or later: one the agent did not get to. */
function firstStepFrom(
  t: Timeline,
  from: number,
): { step: number; kind: string; requestFrame: number } | undefined {
  let first: { step: number; kind: string; requestFrame: number } | undefined;
  for (const s of [...t.steps, ...t.booth]) if (s.step >= from && (!first || s.step < first.step)) first = s;
  return first;
}

function outcomeDivergence(t: Timeline, r: ReplayReport, started: number): Divergence | null {
  const o = t.outcome;
  if (!o) {
    // An unsealed tape (a crashed run): the agent may legitimately go on past its last recorded step.
    return null;
  }
  const left = firstStepFrom(t, started);
  if (left) {
    return {
      step: left.step,
      frame: left.requestFrame,
      kind: left.kind === 'llm' ? 'llm.request' : left.kind === 'tool' ? 'tool.call' : left.kind,
      fields: [`the agent stopped after ${r.replayed} steps; the tape has ${r.steps}`],
      expected: { step: left.step, kind: left.kind },
      actual: { outcome: r.replayedOutcome },
    };
  }
  if (o.status === 'completed' && r.replayedOutcome === 'completed') {
    const expected = recordedResult(t);
    // The raw output first: redacting it walks every string through the secret patterns, needed only on a difference.
    if (sameValue(expected, r.output ?? null)) return null;
    const actual = asRecorded(r.output) ?? null;
    const fields = differences(expected, actual);
    if (!fields.length) return null;
    return {
      step: started,
      frame: o.frame,
      kind: 'outcome',
      fields: fields.map((f) => `result${f === '(value)' ? '' : `.${f}`}`),
      expected: pick(expected, fields),
      actual: pick(actual, fields),
    };
  }
  if ((o.status === 'completed') !== (r.replayedOutcome === 'completed'))
    return {
      step: started,
      frame: o.frame,
      kind: 'outcome',
      fields: ['status'],
      expected: { status: o.status, ...(o.error ? { error: o.error } : {}) },
      actual: { status: r.replayedOutcome, ...(r.error ? { error: r.error } : {}) },
    };
  return null;
}
