/**
 * Two timelines compared step by step. Steps are aligned by a weighted longest-common-subsequence (same kind
 * required; same tool, arguments, model or prompt add weight), so an inserted or removed step shifts the
 * alignment instead of making every later pair differ, as a plain index-by-index comparison would.
 */
import { printable } from '../../errors';
import type { BoothStep } from '../replay/boothSteps';
import { differences } from '../replay/compare';
import type { Timeline, TimelineStep } from '../replay/timeline';

export interface StepView {
  step: number;
  /** A model call, a tool call, or a Shadow Booth step (`ctx.commit`, `ctx.rollback`). */
  kind: 'llm' | 'tool' | 'commit' | 'rollback';
  /** Model for llm steps, tool name for tool steps, the gates a commit named. */
  name: string;
  provider?: string;
  system?: string;
  /** The last message sent (the prompt that step added). */
  prompt?: string;
  args?: unknown;
  /** Response text and tool calls, or the tool's output. */
  output: string;
  error?: string;
  tokens: { input: number; output: number };
  cost: number | null;
  /** fs.mutation / sql.mutation / other effects, one line each. */
  effects: string[];
}

export interface FieldDifference {
  field: string;
  a: unknown;
  b: unknown;
}

export interface DiffRow {
  status: 'same' | 'changed' | 'removed' | 'inserted';
  a?: StepView;
  b?: StepView;
  differences: FieldDifference[];
}

export interface SideSummary {
  file: string;
  tapeId: string;
  steps: number;
  tokens: { input: number; output: number };
  cost: number | null;
  outcome: string;
  result?: unknown;
  parent?: { tapeId: string; forkStep: number };
}

export interface TimelineDiff {
  a: SideSummary;
  b: SideSummary;
  rows: DiffRow[];
  /** Index into rows of the first row that is not `same`; null when the timelines agree step for step. */
  firstDivergence: number | null;
  counts: { same: number; changed: number; removed: number; inserted: number };
}

function text(v: unknown, max = 400): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function effectLine(e: { kind: string; payload: Record<string, unknown> }): string {
  const p = e.payload;
  if (e.kind === 'fs.mutation') return `fs ${p.op} ${printable(String(p.path))}`;
  if (e.kind === 'sql.mutation') return `sql ${text(p.statement, 120)} (${p.rowsAffected ?? '?'} rows)`;
  if (e.kind === 'shell.exec') return `shell ${text(p.argv, 120)} → ${p.exitCode}`;
  if (e.kind === 'mcp.call') return `mcp ${p.server} ${p.method}`;
  return e.kind;
}

// The full conversation stays out of StepView (and --json), but the pairing compares it.
const conversations = new WeakMap<StepView, unknown[]>();

export function viewOf(s: TimelineStep): StepView {
  const messages = s.request?.messages ?? [];
  const last = messages.at(-1) as { content?: unknown } | undefined;
  const out: StepView = {
    step: s.step,
    kind: s.kind,
    name: s.kind === 'llm' ? (s.response?.model ?? s.request?.model ?? '?') : (s.toolName ?? '?'),
    output:
      s.kind === 'llm'
        ? text(
            [
              s.response?.text,
              ...(s.response?.toolCalls ?? []).map((c) => `${c.name}(${JSON.stringify(c.arguments)})`),
            ]
              .filter(Boolean)
              .join(' '),
          )
        : text(s.output),
    tokens: { input: s.usage?.inputTokens ?? 0, output: s.usage?.outputTokens ?? 0 },
    cost: s.cost,
    effects: s.effects.map(effectLine),
  };
  if (s.request) {
    out.provider = s.request.provider;
    if (s.request.system !== undefined) out.system = text(s.request.system);
    if (last) out.prompt = text(last.content);
  }
  if (s.kind === 'tool') out.args = s.args;
  if (s.error) out.error = text(s.error.message);
  if (s.request) conversations.set(out, s.request.messages);
  return out;
}

/** What the agent got from a booth step, in one line: where two runs part at a commit, this says how. */
function boothOutcome(b: BoothStep): string {
  const a = b.answer;
  switch (a.type) {
    case 'committed':
      return text(`committed: ${a.report.verdicts.map((v) => `${v.gate} ok`).join(', ') || 'no gates'}`);
    case 'rolled-back':
      return text(`rolled back at ${a.part}: ${a.reason}`);
    case 'rollback':
      return text(`rolled back: ${b.reason ?? ''}`);
    case 'failed':
      return text(`failed: ${a.error.message}`);
    default:
      return 'unfinished';
  }
}

/** A Shadow Booth step as a row of the diff: the gates it named, what the agent got, the parts it recorded. */
export function boothViewOf(b: BoothStep): StepView {
  return {
    step: b.step,
    kind: b.kind,
    name: b.kind === 'commit' ? (b.gates ?? []).join(', ') || '(no gates)' : 'rollback',
    output: boothOutcome(b),
    tokens: { input: 0, output: 0 },
    cost: null,
    effects: b.activities.flatMap((a) =>
      a.effects
        .filter((e) => e.kind === 'commit' || e.kind === 'rollback')
        .map((e) => `${e.kind} ${String(e.payload.part ?? '')}`.trim()),
    ),
  };
}

/** A timeline's agent steps in step order: model and tool calls and the booth's commits and rollbacks. */
function stepViews(t: Timeline): StepView[] {
  return [...t.steps.map(viewOf), ...t.booth.map(boothViewOf)].sort((x, y) => x.step - y.step);
}

const COMPARED: (keyof StepView)[] = [
  'kind',
  'name',
  'provider',
  'system',
  'prompt',
  'args',
  'output',
  'error',
  'tokens',
  'cost',
  'effects',
];

function fieldDifferences(a: StepView, b: StepView): FieldDifference[] {
  const out: FieldDifference[] = [];
  for (const f of COMPARED) {
    if (differences(a[f], b[f]).length)
      out.push({ field: f === 'name' ? (a.kind === 'llm' ? 'model' : 'tool') : f, a: a[f], b: b[f] });
  }
  // An earlier message that changed (a rewritten question, say) is invisible in the last one: name where.
  const ca = conversations.get(a);
  const cb = conversations.get(b);
  if (ca && cb && !out.some((d) => d.field === 'prompt')) {
    const where = differences(ca, cb, 1)[0];
    if (where) {
      const at = (v: unknown[]) =>
        text(
          where
            .split(/\.|\[(\d+)\]/)
            .filter(Boolean)
            .reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], v),
        );
      // Start both where they part, so a long message shows its change even when clipped.
      const [ta, tb] = [at(ca), at(cb)];
      let p = 0;
      while (p < ta.length && ta[p] === tb[p]) p++;
      const from = p > 24 ? p - 12 : 0;
      const cut = (t: string) => (from ? `…${t.slice(from)}` : t);
      out.push({ field: 'messages', a: `messages${where}: ${cut(ta)}`, b: `messages${where}: ${cut(tb)}` });
    }
  }
  return out;
}

/** How alike two steps are; 0 means they cannot be paired. */
function affinity(a: StepView, b: StepView): number {
  if (a.kind !== b.kind) return 0;
  let score = 4;
  if (a.name === b.name) score += 2;
  if (a.kind === 'tool' && differences(a.args, b.args).length === 0) score += 3;
  if (a.prompt === b.prompt) score += 2;
  if (a.output === b.output) score += 1;
  return score;
}

export function alignSteps(a: StepView[], b: StepView[]): DiffRow[] {
  const n = a.length;
  const m = b.length;
  // best[i][j]: best total affinity aligning a[i..] with b[j..].
  const best = Array.from({ length: n + 1 }, () => new Float64Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) {
      const w = affinity(a[i]!, b[j]!);
      best[i]![j] = Math.max(best[i + 1]![j]!, best[i]![j + 1]!, w > 0 ? w + best[i + 1]![j + 1]! : 0);
    }
  const rows: DiffRow[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m) {
      const w = affinity(a[i]!, b[j]!);
      if (w > 0 && best[i]![j] === w + best[i + 1]![j + 1]!) {
        const d = fieldDifferences(a[i]!, b[j]!);
        rows.push({ status: d.length ? 'changed' : 'same', a: a[i], b: b[j], differences: d });
        i++;
        j++;
        continue;
      }
      if (best[i]![j] === best[i + 1]![j]) {
        rows.push({ status: 'removed', a: a[i++], differences: [] });
        continue;
      }
      rows.push({ status: 'inserted', b: b[j++], differences: [] });
      continue;
    }
    if (i < n) rows.push({ status: 'removed', a: a[i++], differences: [] });
    else rows.push({ status: 'inserted', b: b[j++], differences: [] });
  }
  return rows;
}

function summary(t: Timeline): SideSummary {
  const tokens = { input: 0, output: 0 };
  let cost: number | null = null;
  for (const s of t.steps) {
    tokens.input += s.usage?.inputTokens ?? 0;
    tokens.output += s.usage?.outputTokens ?? 0;
    if (s.cost !== null) cost = (cost ?? 0) + s.cost;
  }
  const h = t.tape.header;
  const out: SideSummary = {
    file: t.file,
    tapeId: h.tapeId,
    steps: t.steps.length + t.booth.length,
    tokens,
    cost,
    outcome: t.outcome?.status ?? 'running',
  };
  if (t.outcome?.result !== undefined) out.result = t.outcome.result;
  else if (t.outcome?.error) out.result = t.outcome.error.message;
  if (h.parent) out.parent = { tapeId: h.parent.tapeId, forkStep: h.parent.forkStep };
  return out;
}

export function diffTimelines(a: Timeline, b: Timeline): TimelineDiff {
  const rows = alignSteps(stepViews(a), stepViews(b));
  const counts = { same: 0, changed: 0, removed: 0, inserted: 0 };
  for (const r of rows) counts[r.status]++;
  const first = rows.findIndex((r) => r.status !== 'same');
  return { a: summary(a), b: summary(b), rows, firstDivergence: first === -1 ? null : first, counts };
}
