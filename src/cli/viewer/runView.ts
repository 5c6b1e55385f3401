/**
 * A tape as the viewer shows it: one row per activity (llm and tool steps, booth verify/commit/rollback
 * activities, anything else the run recorded) with its timing, tokens, cost and the effect kinds inside it, the
 * outcome, and the tape's verification status. Built from a tape read with `recover`, so a damaged tape shows
 * every frame that verified and names the first one that did not.
 */
import path from 'node:path';
import type { ApprovalOutcome } from '../../agent/approval';
import { oneLine, printable } from '../../errors';
import { BoothOutcome, type RolledBack } from '../../recorder/boothOutcome';
import { derefValue, type Tape, TapeError, type TapeFrame, type TapeHeader } from '../../recorder/tape';
import { ApprovalReader } from '../../timetravel/replay/approvals';
import { readTimeline, type Timeline } from '../../timetravel/replay/timeline';
import { describeApproval } from '../show/render';
import { forkCommandLine } from './commandLine';
import { clip, jsonValue } from './jsonValue';

export interface Verification {
  /** `intact`: every frame verified (sealed or still recording); `torn-tail`: a partial last frame; `damaged`. */
  status: 'intact' | 'torn-tail' | 'damaged';
  sealed: boolean;
  /** Frames that verified (all of them when intact). */
  verifiedFrames: number;
  firstBadFrame: number | null;
  offset: number | null;
  code: string | null;
  reason: string | null;
  /** Chain value after the last verified frame. */
  chain: string;
}

export type RowKind = 'llm' | 'tool' | 'booth' | 'activity' | 'other';

export interface StepRow {
  /** Position in `rows`; what the detail endpoint takes. */
  i: number;
  step: number;
  kind: RowKind;
  activityId: string | null;
  activityType: string | null;
  /** Model for llm rows, tool name for tool rows, the activity type otherwise. */
  label: string;
  attempts: number;
  status: 'ok' | 'error' | 'open';
  startUs: number;
  endUs: number;
  frames: number[];
  tokens: { input: number; output: number } | null;
  cost: number | null;
  /** Effect and decision kinds inside the row: fs.mutation, sql.mutation, commit, rollback, breaker.trip... */
  marks: string[];
  chunks: number;
  preview: string;
  error: string | null;
  /** The exact `jbx fork` command that forks the run at this step (llm and tool steps only). */
  fork: string | null;
}

export interface RunView {
  id: string;
  file: string;
  header:
    | (Omit<TapeHeader, 'parent'> & { parent?: { tapeId: string; forkStep: number; tapeHash: string } })
    | null;
  bytes: number;
  frameCount: number;
  blobCount: number;
  verification: Verification;
  startUs: number;
  endUs: number;
  rows: StepRow[];
  outcome: { status: string; frame: number; result?: unknown; error?: unknown } | null;
  /** The run's staging was rolled back (refused or failed commit, or ctx.rollback): where and why. */
  rolledBack: RolledBack | null;
  /** Every approval the run asked for, with what was staged then and how it ended. */
  approvals: ApprovalView[];
  /** The approval the run waits for now: asked, not decided, and the run has no outcome yet. */
  waiting: ApprovalView | null;
  tokens: { input: number; output: number };
  cost: number | null;
}

type P = Record<string, unknown>;

/** An approval as the page shows it: the request with the staged diff a person reviews, and the decision. */
export interface ApprovalView {
  id: string;
  step: number;
  kind: string;
  reason: string;
  subject: unknown;
  requestedAtMs: number | null;
  deadlineMs: number | null;
  timeout: string | null;
  onTimeout: string | null;
  deciders: string[] | null;
  staged: {
    files: Array<{ path: string; op: string; summary: string; diff: string | null }>;
    sql: string[];
    mcp: string[];
  } | null;
  outcome: ApprovalOutcome | null;
  inheritedFrom: string | null;
  /** The request's (or, taken over by a fork, the decision's) one-line description, as jbx show prints it. */
  line: string;
}

function approvalViews(tape: Tape): ApprovalView[] {
  const reader = new ApprovalReader();
  for (const f of tape.frames) if (f.kind === 'approval') reader.add(f);
  return reader.list().map((a) => {
    const r = (a.request ?? {}) as P;
    const staged = r.staged as { files?: P[]; sql?: unknown[]; mcp?: unknown[] } | undefined;
    const last = tape.frames[a.decisionFrame ?? a.requestFrame ?? -1];
    return {
      id: a.id,
      step: a.step,
      kind: a.kind,
      reason: typeof r.reason === 'string' ? r.reason : '',
      subject: jsonValue(tape, a.subject ?? null),
      requestedAtMs: typeof r.requestedAtMs === 'number' ? r.requestedAtMs : null,
      deadlineMs: typeof r.deadlineMs === 'number' ? r.deadlineMs : null,
      timeout: typeof r.timeout === 'string' ? r.timeout : null,
      onTimeout: typeof r.onTimeout === 'string' ? r.onTimeout : null,
      deciders: Array.isArray(r.deciders) ? r.deciders.map(String) : null,
      staged: staged
        ? {
            files: (staged.files ?? []).map((f) => {
              const diff = f.diff === undefined ? null : derefValue(tape, f.diff);
              return {
                path: String(f.path),
                op: String(f.op),
                summary: String(f.summary ?? ''),
                diff: typeof diff === 'string' ? diff : null,
              };
            }),
            sql: (staged.sql ?? []).map(String),
            mcp: (staged.mcp ?? []).map(String),
          }
        : null,
      outcome: a.outcome ? (jsonValue(tape, a.outcome) as ApprovalOutcome) : null,
      inheritedFrom: a.inheritedFrom ?? null,
      line: last ? describeApproval(last.payload as P) : '',
    };
  });
}

export function verificationOf(tape: Tape): Verification {
  const c = tape.corruption;
  const torn = tape.tornTail;
  return {
    status: c ? 'damaged' : torn ? 'torn-tail' : 'intact',
    sealed: tape.sealed,
    verifiedFrames: tape.frames.length,
    firstBadFrame: c ? c.frameIndex : null,
    offset: c ? c.offset : torn ? torn.offset : null,
    code: c ? c.code : torn ? 'TORN_TAIL' : null,
    reason: c
      ? c.message
      : torn
        ? `torn tail: ${torn.bytesDropped} bytes at byte ${torn.offset} do not form a complete frame (the run was cut off while writing)`
        : null,
    chain: tape.chain,
  };
}

/** A header that could not be read: the page still says which file and why. */
export function unreadableRun(id: string, file: string, bytes: number, err: TapeError): RunView {
  return {
    id,
    file,
    header: null,
    bytes,
    frameCount: 0,
    blobCount: 0,
    verification: {
      status: 'damaged',
      sealed: false,
      verifiedFrames: 0,
      firstBadFrame: null,
      offset: err.offset,
      code: err.code,
      reason: err.message,
      chain: '',
    },
    startUs: 0,
    endUs: 0,
    rows: [],
    outcome: null,
    rolledBack: null,
    approvals: [],
    waiting: null,
    tokens: { input: 0, output: 0 },
    cost: null,
  };
}

/** The timeline when the tape supports one; a tape that cannot be read as steps still lists its frames. */
export function timelineOf(tape: Tape, file: string): Timeline | null {
  try {
    return readTimeline(tape, file);
  } catch (err) {
    if (err instanceof TapeError || (err as { code?: string }).code) return null;
    throw err;
  }
}

const KIND_OF: Record<string, 'llm' | 'tool'> = { llmStep: 'llm', toolStep: 'tool' };
const QUIET = new Set(['activity.start', 'activity.complete', 'activity.error', 'blob', 'seal']);

function textOf(v: unknown, max = 160): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  return clip(oneLine(s.replace(/\s+/g, ' ').trim()), max);
}

/**
 * What the timeline row of an llm or tool step shows, read from the final attempt's own frames only. The full
 * step (its conversation resolved) is built per step when it is opened: resolving every step's conversation
 * up front costs time quadratic in the run's length, which a 2,000-step run cannot afford on open.
 */
interface StepFacts {
  kind: 'llm' | 'tool';
  model?: string;
  text?: string;
  toolCalls: { name: string; arguments: unknown }[];
  usage: { inputTokens: number; outputTokens: number } | null;
  cost: number | null;
  chunks: number;
  toolName?: string;
  args?: unknown;
  output?: unknown;
  error?: { message?: string };
}

function stepFacts(tape: Tape, kind: 'llm' | 'tool', frames: TapeFrame[], attempt: number): StepFacts {
  const s: StepFacts = { kind, toolCalls: [], usage: null, cost: null, chunks: 0 };
  for (const f of frames) {
    const p = (f.payload ?? {}) as P;
    if ((typeof p.attempt === 'number' ? p.attempt : 1) !== attempt) continue;
    if (f.kind === 'llm.request') s.model ??= String(p.model);
    else if (f.kind === 'llm.chunk') s.chunks += Array.isArray(p.chunks) ? p.chunks.length : 0;
    else if (f.kind === 'llm.response') {
      s.model = String(p.model ?? s.model);
      const m = derefValue(tape, p.message) as
        | { content?: unknown; toolCalls?: StepFacts['toolCalls'] }
        | undefined;
      s.text = typeof m?.content === 'string' ? m.content : '';
      s.toolCalls = Array.isArray(m?.toolCalls) ? m.toolCalls : [];
      const u = p.usage as { inputTokens?: number; outputTokens?: number } | undefined;
      if (u) s.usage = { inputTokens: Number(u.inputTokens ?? 0), outputTokens: Number(u.outputTokens ?? 0) };
      s.cost = typeof p.cost === 'number' ? p.cost : null;
    } else if (f.kind === 'tool.call') {
      s.toolName = String(p.toolName);
      s.args = p.args;
    } else if (f.kind === 'tool.result') {
      if (p.isError) s.error = (p.error ?? {}) as StepFacts['error'];
      else s.output = derefValue(tape, p.output);
    } else if (f.kind === 'activity.start' && kind === 'tool' && s.toolName === undefined) {
      const i = derefValue(tape, p.input) as { name?: unknown; args?: unknown } | undefined;
      if (i && typeof i === 'object' && typeof i.name === 'string') {
        s.toolName = i.name;
        s.args = i.args;
      }
    }
  }
  return s;
}

function previewOf(s: StepFacts | undefined, tape: Tape, frames: TapeFrame[]): string {
  if (s?.kind === 'llm') {
    const calls = s.toolCalls.map((c) => `${c.name}(${textOf(c.arguments, 60)})`);
    return textOf([s.text, ...calls].filter(Boolean).join(' → '));
  }
  if (s?.kind === 'tool')
    return `${s.toolName}(${textOf(s.args, 60)}) → ${textOf(s.error?.message ?? s.output, 80)}`;
  const effect = frames.find((f) => f.kind && !QUIET.has(f.kind));
  if (effect?.kind === 'approval') return textOf(describeApproval(effect.payload as P), 200);
  if (effect) {
    const p = effect.payload as P;
    // A file name is shown escaped and quoted when it needs it, so a newline in it is not mistaken for a space.
    const what =
      p.part ?? p.reason ?? p.statement ?? (typeof p.path === 'string' ? printable(p.path) : p.path) ?? '';
    return textOf(`${effect.kind} ${textOf(jsonValue(tape, what), 120)}`);
  }
  return '';
}

export function buildRunView(id: string, file: string, bytes: number, tape: Tape): RunView {
  interface Group {
    step: number;
    activityId: string | null;
    activityType: string | null;
    frames: TapeFrame[];
    attempts: Set<number>;
    lastAttempt: number;
    status: StepRow['status'];
    error: string | null;
  }
  const groups: Group[] = [];
  const byActivity = new Map<string, Group>();
  const byStep = new Map<number, Group>();
  const orphans: TapeFrame[] = [];
  let outcome: RunView['outcome'] = null;
  let runEnd: number | null = null;
  const booth = new BoothOutcome();
  let t0 = Number.POSITIVE_INFINITY;
  let t1 = 0;

  for (const f of tape.frames) {
    if (f.kind === 'seal') continue;
    // Blob frames are stamped when their batch is written; they carry no timing of their own worth a bar.
    if (f.kind !== 'blob') {
      if (f.recordedAtUs < t0) t0 = f.recordedAtUs;
      if (f.recordedAtUs > t1) t1 = f.recordedAtUs;
    }
    if (f.kind === 'blob') continue;
    const p = (f.payload ?? {}) as P;
    booth.see(f.kind, f.step, p);
    if (f.kind === 'outcome') {
      runEnd = f.step;
      outcome = { status: String(p.status), frame: f.index };
      if (p.result !== undefined) outcome.result = jsonValue(tape, p.result);
      if (p.error !== undefined) outcome.error = jsonValue(tape, p.error);
      continue;
    }
    const activityId = typeof p.activityId === 'string' ? p.activityId : null;
    if (activityId === null) {
      orphans.push(f);
      continue;
    }
    // Activity ids restart in each segment of a run that continued as new; its later frames name their run.
    const key = `${typeof p.runId === 'string' ? p.runId : tape.header.runId}/${activityId}`;
    let g = byActivity.get(key);
    if (!g) {
      g = {
        step: f.step,
        activityId,
        activityType: null,
        frames: [],
        attempts: new Set(),
        lastAttempt: 0,
        status: 'open',
        error: null,
      };
      byActivity.set(key, g);
      groups.push(g);
      if (!byStep.has(f.step)) byStep.set(f.step, g);
    }
    g.frames.push(f);
    const attempt = typeof p.attempt === 'number' ? p.attempt : 1;
    g.attempts.add(attempt);
    if (f.kind === 'activity.start') {
      g.activityType = String(p.activityType ?? '');
      if (attempt >= g.lastAttempt) {
        g.lastAttempt = attempt;
        g.status = 'open';
        g.error = null;
      }
    } else if (f.kind === 'activity.complete' && attempt >= g.lastAttempt) g.status = 'ok';
    else if (f.kind === 'activity.error' && attempt >= g.lastAttempt) {
      g.status = 'error';
      g.error = textOf((p.error as P | undefined)?.message ?? p.error, 300);
    }
  }
  // Random and clock readings belong to the step that made them, which is not an activity of its own.
  for (const f of orphans) {
    let g = byStep.get(f.step);
    if (!g) {
      g = {
        step: f.step,
        activityId: null,
        activityType: null,
        frames: [],
        attempts: new Set(),
        lastAttempt: 0,
        status: 'ok',
        error: null,
      };
      byStep.set(f.step, g);
      groups.push(g);
    }
    g.frames.push(f);
  }
  for (const g of groups) g.frames.sort((a, b) => a.index - b.index);
  groups.sort((a, b) => a.frames[0]!.index - b.frames[0]!.index);

  const tokens = { input: 0, output: 0 };
  let cost: number | null = null;
  const rows = groups.map((g, i): StepRow => {
    const stepKind = KIND_OF[g.activityType ?? ''];
    const s = stepKind ? stepFacts(tape, stepKind, g.frames, g.lastAttempt || 1) : undefined;
    const kind: RowKind =
      KIND_OF[g.activityType ?? ''] ??
      (g.activityType?.startsWith('booth') ? 'booth' : g.activityId ? 'activity' : 'other');
    const timed = g.frames.filter((f) => f.kind !== 'blob');
    const marks = [
      ...new Set(
        g.frames
          .map((f) => f.kind ?? `kind ${f.kindCode}`)
          .filter((k) => !QUIET.has(k) && !k.startsWith('llm.') && !k.startsWith('tool.')),
      ),
    ];
    const usage = s?.usage ?? null;
    if (usage) {
      tokens.input += usage.inputTokens;
      tokens.output += usage.outputTokens;
    }
    if (s && s.cost !== null) cost = (cost ?? 0) + s.cost;
    return {
      i,
      step: g.step,
      kind,
      activityId: g.activityId,
      activityType: g.activityType,
      label:
        kind === 'llm'
          ? (s?.model ?? 'model')
          : kind === 'tool'
            ? (s?.toolName ?? 'tool')
            : (g.activityType ?? marks[0] ?? 'frames'),
      attempts: Math.max(1, g.attempts.size),
      status: g.status,
      startUs: timed.reduce((m, f) => Math.min(m, f.recordedAtUs), timed[0]?.recordedAtUs ?? 0),
      endUs: timed.reduce((m, f) => Math.max(m, f.recordedAtUs), 0),
      frames: g.frames.map((f) => f.index),
      tokens: usage ? { input: usage.inputTokens, output: usage.outputTokens } : null,
      cost: s?.cost ?? null,
      marks,
      chunks: s?.chunks ?? 0,
      preview: previewOf(s, tape, g.frames),
      error: g.error,
      fork: s ? forkCommandLine(file, g.step) : null,
    };
  });
  const h = tape.header;
  const approvals = approvalViews(tape);
  return {
    id,
    file: path.basename(file),
    header: {
      ...h,
      ...(h.parent
        ? {
            parent: {
              tapeId: h.parent.tapeId,
              forkStep: h.parent.forkStep,
              tapeHash: String(h.parent.tapeHash),
            },
          }
        : {}),
      ...(h.meta ? { meta: jsonValue(tape, h.meta) as Record<string, unknown> } : {}),
    },
    bytes,
    frameCount: tape.frames.length,
    blobCount: tape.blobs.size,
    verification: verificationOf(tape),
    startUs: Number.isFinite(t0) ? t0 : h.createdAtMs * 1000,
    endUs: Math.max(t1, Number.isFinite(t0) ? t0 : 0),
    rows,
    outcome,
    rolledBack: booth.result(runEnd),
    approvals,
    waiting: outcome === null ? ([...approvals].reverse().find((a) => a.outcome === null) ?? null) : null,
    tokens,
    cost,
  };
}
