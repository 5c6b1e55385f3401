/**
 * The first step where a fork got an answer its recording did not. Only answers count (what the model said,
 * what a tool returned, what the gates decided, how the run ended): the requests differ by design, since the
 * change is the experiment. A run's own ids (workflow id, run id, which a tool may put in its output, such as a
 * notification id) are not a difference, and neither is a gate's wording: a commit compares by what each gate
 * decided (passed, refused, asked a person), since a gate's reason quotes its parameters.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Timeline } from '../replay/timeline';
import type { FirstDivergence } from './types';

type Verdict = { gate: string; ok: boolean; reason: string; needsApproval?: true };

const decisions = (verdicts: readonly Verdict[]) =>
  verdicts.map((v) => [v.gate, v.ok ? 'passed' : v.needsApproval ? 'asked' : 'refused']);

interface Answer {
  step: number;
  kind: string;
  frame: number;
  fields: Record<string, unknown>;
}

function answersOf(t: Timeline): Answer[] {
  const out: Answer[] = [];
  for (const s of t.steps) {
    const error = s.error ? { name: s.error.name, message: s.error.message } : undefined;
    if (s.kind === 'llm')
      out.push({
        step: s.step,
        kind: 'llm',
        frame: s.firstFrame,
        fields: {
          text: s.response?.text,
          toolCalls: s.response?.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })),
          finishReason: s.response?.finishReason,
          error,
        },
      });
    else
      out.push({
        step: s.step,
        kind: 'tool',
        frame: s.firstFrame,
        fields: { tool: s.toolName, args: s.args, output: s.output, error },
      });
  }
  for (const b of t.booth) {
    const a = b.answer;
    out.push({
      step: b.step,
      kind: b.kind,
      frame: b.firstFrame,
      fields:
        a.type === 'committed'
          ? { answer: 'committed', verdicts: decisions(a.report.verdicts) }
          : a.type === 'rolled-back'
            ? {
                answer: 'rolled-back',
                part: a.part,
                verdicts: decisions(a.verdicts),
              }
            : a.type === 'rollback'
              ? { answer: 'rollback', reason: b.reason }
              : { answer: a.type },
    });
  }
  out.sort((x, y) => x.step - y.step);
  out.push({
    step: t.outcome?.step ?? out.length,
    kind: 'end',
    frame: t.outcome?.frame ?? t.tape.frames.length,
    // The result is the agent's function of the answers above and of what the world held when its commits
    // staged (a file's size in a staged summary): shown in the report, not compared.
    fields: { status: t.outcome?.status },
  });
  return out;
}

/**
 * Replaces the run's own ids and its gates' reasons in every string (as JSON, so quoted text matches too), so
 * that two runs' answers compare by what they say.
 */
function normalized(value: unknown, replacements: [string, string][]): unknown {
  let text = JSON.stringify(value ?? null);
  for (const [from, to] of replacements) if (from) text = text.split(from).join(to);
  return JSON.parse(text);
}

function replacementsOf(t: Timeline): [string, string][] {
  const h = t.tape.header;
  const out: [string, string][] = [
    [h.workflowId, '{run}'],
    [h.runId, '{run}'],
  ];
  for (const b of t.booth) {
    const a = b.answer;
    const verdicts = a.type === 'committed' ? a.report.verdicts : a.type === 'rolled-back' ? a.verdicts : [];
    for (const v of verdicts) out.push([JSON.stringify(v.reason).slice(1, -1), `{reason of ${v.gate}}`]);
  }
  // Longest first: a fork's workflow id starts with its parent's, a refusal's message quotes the gate's reason.
  return out.filter(([from]) => from.length > 0).sort((x, y) => y[0].length - x[0].length);
}

/** Null when every answer and the outcome match. */
export function firstDivergence(parent: Timeline, fork: Timeline): FirstDivergence | null {
  const a = answersOf(parent);
  const b = answersOf(fork);
  const aIds = replacementsOf(parent);
  const bIds = replacementsOf(fork);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (!x || !y || x.kind !== y.kind) {
      const at = y ?? x!;
      return {
        step: at.step,
        frame: y?.frame ?? fork.tape.frames.length,
        parentFrame: x?.frame ?? parent.tape.frames.length,
        kind: x && y ? `${x.kind}→${y.kind}` : at.kind,
        fields: ['kind'],
      };
    }
    const fields = [...new Set([...Object.keys(x.fields), ...Object.keys(y.fields)])].filter(
      (k) => !isDeepStrictEqual(normalized(x.fields[k], aIds), normalized(y.fields[k], bIds)),
    );
    if (fields.length) return { step: y.step, frame: y.frame, parentFrame: x.frame, kind: y.kind, fields };
  }
  return null;
}
