/**
 * Everything about one row of a run, for the step panel: the conversation as messages, the model's answer and
 * its streamed chunks with their recorded offsets, the tool call and result, each effect frame (staged file
 * writes with a line diff against the file's previous staged version on the tape, SQL statements, MCP calls,
 * shell commands, commit / rollback / breaker decisions), the attempts and the raw frames.
 */

import { oneLine, printable } from '../../errors';
import { BlobRef, decodeBlob, type Tape, type TapeFrame } from '../../recorder/tape';
import { readTimeline } from '../../timetravel/replay/timeline';
import { type DiffLine, lineDiff } from './fileDiff';
import { bytesText, jsonValue } from './jsonValue';
import type { StepRow } from './runView';

type P = Record<string, unknown>;

export interface EffectView {
  kind: string;
  frame: number;
  atUs: number;
  /** One line: what happened. */
  summary: string;
  payload: unknown;
  /** fs.mutation with content: the change against the previous staged version on the tape. */
  diff?: {
    path: string;
    against: 'previous staged version' | 'nothing on the tape before';
    lines: DiffLine[];
  };
}

export interface StepDetail {
  row: StepRow;
  llm?: {
    provider: string;
    model: string;
    system?: string;
    params: P;
    messages: unknown[];
    tools: number;
    response?: { text: string; toolCalls: unknown[]; finishReason: string; model: string };
    chunks: { seq: number; offsetMs: number; text: string }[];
  };
  tool?: { name: string; args: unknown; output?: unknown; error?: unknown };
  input?: unknown;
  result?: unknown;
  effects: EffectView[];
  attempts: { attempt: number; startUs: number; endUs: number; status: string; error?: unknown }[];
  frames: {
    index: number;
    kind: string;
    offset: number;
    length: number;
    atUs: number;
    payloadHash: string;
  }[];
  temporalUrl: string | null;
}

function contentOf(tape: Tape, ref: unknown): string | undefined {
  if (!(ref instanceof BlobRef))
    return typeof ref === 'string' ? ref : ref instanceof Uint8Array ? bytesText(ref) : undefined;
  const blob = tape.blobs.get(ref.hash);
  if (!blob) return undefined;
  const v = decodeBlob(blob);
  return v instanceof Uint8Array ? bytesText(v) : typeof v === 'string' ? v : JSON.stringify(v);
}

function line(v: unknown, max = 200): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function summaryOf(tape: Tape, f: TapeFrame): string {
  const p = (f.payload ?? {}) as P;
  switch (f.kind) {
    case 'fs.mutation':
      return `${p.op} ${typeof p.from === 'string' ? `${printable(p.from)} → ` : ''}${printable(String(p.path))}`;
    case 'sql.mutation':
      return `${line(p.statement)}${p.params ? ` ${line(jsonValue(tape, p.params), 120)}` : ''} (${p.kind ?? 'statement'}, ${p.rowsAffected ?? '?'} rows)`;
    case 'mcp.call': {
      const params = (p.params ?? {}) as P;
      return `${p.server} ${p.method} ${params.name ?? ''}${p.phase ? ` [${p.phase}]` : p.escrowed ? ' [escrowed]' : ''}`;
    }
    case 'shell.exec':
      return `$ ${line(oneLine((p.argv as unknown[] | undefined)?.join(' ') ?? ''))} → exit ${p.exitCode}`;
    case 'commit':
      return `commit ${p.part ?? ''}${p.recovered ? ' (recovered)' : ''}`;
    case 'rollback':
      return `rollback ${p.part ?? ''}${p.reason ? `: ${line(p.reason)}` : ''}`;
    case 'breaker.trip':
      return `breaker tripped: ${p.detector ?? ''} on ${p.track ?? '?'}: ${line(p.reason)}`;
    case 'random':
      return `random ${line((p.values as unknown[] | undefined)?.[0])}`;
    case 'clock':
      return `clock ${new Date(Number(p.nowMs)).toISOString()}`;
    default:
      return f.kind ?? `unknown kind ${f.kindCode}`;
  }
}

function fileDiff(tape: Tape, f: TapeFrame): EffectView['diff'] {
  const p = f.payload as P;
  if (p.after === undefined || typeof p.path !== 'string') return undefined;
  const after = contentOf(tape, p.after);
  if (after === undefined) return undefined;
  let before: string | undefined;
  for (let i = f.index - 1; i >= 0; i--) {
    const g = tape.frames[i]!;
    if (g.kind !== 'fs.mutation') continue;
    const q = g.payload as P;
    if (q.path !== p.path) continue;
    if (q.op === 'rm') before = '';
    else if (q.after !== undefined) before = contentOf(tape, q.after);
    else continue;
    break;
  }
  return {
    path: printable(p.path),
    against: before === undefined ? 'nothing on the tape before' : 'previous staged version',
    lines: lineDiff(before ?? '', after),
  };
}

export function stepDetail(tape: Tape, row: StepRow, temporalUrl: string | null): StepDetail {
  const frames = row.frames.map((i) => tape.frames[i]!);
  // The step as replay reads it, from this row's frames alone: its conversation resolved, and nobody else's.
  const s =
    row.kind === 'llm' || row.kind === 'tool'
      ? readTimeline({ ...tape, frames }, row.activityId ?? undefined).steps.find(
          (x) => x.activityId === row.activityId,
        )
      : undefined;
  const out: StepDetail = { row, effects: [], attempts: [], frames: [], temporalUrl };
  if (s?.kind === 'llm' && s.request) {
    const r = s.request;
    out.llm = {
      provider: r.provider,
      model: r.model,
      ...(r.system !== undefined ? { system: String(jsonValue(tape, r.system)) } : {}),
      params: jsonValue(tape, { temperature: r.temperature, maxTokens: r.maxTokens, stream: r.stream }) as P,
      messages: jsonValue(tape, r.messages) as unknown[],
      tools: r.tools?.length ?? 0,
      chunks: s.chunks.slice(0, 20_000).map((c) => ({
        seq: Number(c[0]),
        offsetMs: Number(c[1]) || 0,
        text: typeof c[2] === 'string' ? c[2] : '',
      })),
    };
    if (s.response)
      out.llm.response = {
        text: String(jsonValue(tape, s.response.text)),
        toolCalls: jsonValue(tape, s.response.toolCalls) as unknown[],
        finishReason: s.response.finishReason,
        model: s.response.model,
      };
  }
  if (s?.kind === 'tool') {
    out.tool = { name: s.toolName ?? '?', args: jsonValue(tape, s.args) };
    if (s.error) out.tool.error = jsonValue(tape, s.error);
    else out.tool.output = jsonValue(tape, s.output);
  }
  const attempts = new Map<number, StepDetail['attempts'][number]>();
  for (const f of frames) {
    const p = (f.payload ?? {}) as P;
    if (f.kind === 'activity.start' || f.kind === 'activity.complete' || f.kind === 'activity.error') {
      const n = typeof p.attempt === 'number' ? p.attempt : 1;
      const a = attempts.get(n) ?? {
        attempt: n,
        startUs: f.recordedAtUs,
        endUs: f.recordedAtUs,
        status: 'open',
      };
      attempts.set(n, a);
      a.endUs = Math.max(a.endUs, f.recordedAtUs);
      if (f.kind === 'activity.start' && !s && p.input !== undefined) out.input = jsonValue(tape, p.input);
      if (f.kind === 'activity.complete') {
        a.status = 'ok';
        if (!s && p.result !== undefined) out.result = jsonValue(tape, p.result);
      }
      if (f.kind === 'activity.error') {
        a.status = 'error';
        a.error = jsonValue(tape, p.error);
      }
    }
    if (
      f.kind &&
      !f.kind.startsWith('llm.') &&
      !f.kind.startsWith('tool.') &&
      !f.kind.startsWith('activity.') &&
      f.kind !== 'blob'
    ) {
      const e: EffectView = {
        kind: f.kind,
        frame: f.index,
        atUs: f.recordedAtUs,
        summary: summaryOf(tape, f),
        payload: jsonValue(tape, f.payload, { maxString: 4_000, maxDepth: 8, maxItems: 200 }),
      };
      if (f.kind === 'fs.mutation') {
        const d = fileDiff(tape, f);
        if (d) e.diff = d;
      }
      out.effects.push(e);
    } else if (f.kind === undefined) {
      out.effects.push({
        kind: `unknown kind ${f.kindCode}`,
        frame: f.index,
        atUs: f.recordedAtUs,
        summary: `frame of kind code ${f.kindCode}, which this viewer does not know`,
        payload: null,
      });
    }
    out.frames.push({
      index: f.index,
      kind: f.kind ?? `kind ${f.kindCode}`,
      offset: f.offset,
      length: f.length,
      atUs: f.recordedAtUs,
      payloadHash: f.payloadHash,
    });
  }
  out.attempts = [...attempts.values()].sort((a, b) => a.attempt - b.attempt);
  return out;
}
