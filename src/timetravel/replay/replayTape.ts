/**
 * Offline replay: re-executes the agent's code in this process with every step answered from the tape, and
 * audits it: each request is compared with the recorded one, then the output with the recorded outcome.
 */

import type { AgentDefinition } from '../../agent/context';
import type { Tape } from '../../recorder/tape';
import { asRecorded, differences, pick, sameValue } from './compare';
import { type Divergence, ReplayDivergenceError, TapeNotReplayableError } from './errors';
import { createOfflineContext } from './offlineContext';
import { plainClone } from './plainClone';
import { readTimeline, type Timeline } from './timeline';

export interface ReplayReport {
  file: string;
  workflowType: string;
  /** Steps on the tape, and how many the replay answered from it. */
  steps: number;
  replayed: number;
  /** `match`: every step and the outcome agree. `diverged`: see divergence. `incomplete`: the tape is unsealed and every step it holds agreed. */
  status: 'match' | 'diverged' | 'incomplete';
  divergence: Divergence | null;
  recordedOutcome: string | null;
  replayedOutcome: 'completed' | 'failed';
  output?: unknown;
  error?: string;
  durationMs: number;
}

export interface ReplayOptions {
  /** The agent to run; when absent the caller located it from the header (agentLocator). */
  agent: AgentDefinition<unknown, unknown>;
  /** Read tape (benchmarks replay one tape many times without re-reading it). */
  timeline?: Timeline;
}

export async function replayTape(input: string | Tape, options: ReplayOptions): Promise<ReplayReport> {
  const t0 = performance.now();
  const timeline = options.timeline ?? readTimeline(input);
  const file = timeline.file;
  if (!timeline.input.present && timeline.steps.length > 0)
    throw new TapeNotReplayableError(
      file,
      'it does not hold the run input (recorded on the first step since the replay feature; older tapes lack it)',
    );
  const { ctx, state } = createOfflineContext(timeline);
  const report: ReplayReport = {
    file,
    workflowType: timeline.tape.header.workflowType,
    steps: timeline.steps.length,
    replayed: 0,
    status: 'match',
    divergence: null,
    recordedOutcome: timeline.outcome?.status ?? null,
    replayedOutcome: 'completed',
    durationMs: 0,
  };
  try {
    report.output = await options.agent.run(ctx, plainClone(timeline.input.value));
  } catch (err) {
    if (err instanceof ReplayDivergenceError) report.divergence = err.divergence;
    report.replayedOutcome = 'failed';
    report.error = err instanceof Error ? err.message : String(err);
  }
  report.replayed = state.replayed;
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

function outcomeDivergence(t: Timeline, r: ReplayReport, started: number): Divergence | null {
  const o = t.outcome;
  if (!o) {
    // An unsealed tape (a crashed run): the agent may legitimately go on past its last recorded step.
    return null;
  }
  if (started < t.steps.length) {
    const s = t.steps[started]!;
    return {
      step: started,
      frame: s.requestFrame,
      kind: s.kind === 'llm' ? 'llm.request' : 'tool.call',
      fields: [`the agent stopped after ${started} steps; the tape has ${t.steps.length}`],
      expected: { step: started, kind: s.kind },
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
