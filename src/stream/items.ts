/**
 * What a follower of a run receives: one typed item per tape frame that tells a watcher something (model
 * tokens, tool steps, staged effects, commits, approvals, the outcome). Blob, clock, random, history and
 * seal frames give none. An item's `position` is its frame's index on the tape: stable, strictly increasing,
 * and what a follower resumes `after`.
 */

import type { TapeBlob, TapeFrame } from '../recorder/tape';
import { BlobRef, chunkEntries, derefValue } from '../recorder/tape';
import { plainValue } from './plainValue';

interface ItemBase {
  /** The frame's index on the tape. */
  position: number;
  /** The agent step the frame belongs to. */
  step: number;
  /** When the writer recorded the frame, microseconds since the Unix epoch. */
  recordedAtUs: number;
  /** The activity attempt that wrote it (absent on workflow-side frames: segment, outcome, ...). */
  activityId?: string;
  attempt?: number;
  /** The Temporal run (segment) that wrote it, when it is not the tape's first. */
  runId?: string;
}

export interface StepItem extends ItemBase {
  kind: 'step';
  activityType: string;
  attempt: number;
  /**
   * An earlier attempt of this activity that wrote items before it failed or its worker died: its `token`
   * items (and any staged effects) are superseded by this attempt's. Absent on a first attempt.
   */
  retryOf?: number;
}
export interface RequestItem extends ItemBase {
  kind: 'request';
  provider: string;
  model: string;
}
export interface TokenChunk {
  seq: number;
  /** Milliseconds from the request to this chunk's arrival. */
  offsetMs: number;
  /** Its text, or null for a chunk without text (tool-call argument pieces, usage). */
  text: string | null;
  /** The provider's raw event, for chunks without text. */
  raw?: unknown;
}
export interface TokenItem extends ItemBase {
  kind: 'token';
  /** The text of every chunk of this batch, joined. */
  text: string;
  chunks: TokenChunk[];
}
export interface ToolCallSummary {
  id?: string;
  name: string;
  arguments: unknown;
}
export interface ResponseItem extends ItemBase {
  kind: 'response';
  text: string;
  toolCalls: ToolCallSummary[];
  model: string;
  stopReason: string | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  cost: number | null;
}
export interface ToolCallItem extends ItemBase {
  kind: 'tool.call';
  toolName: string;
  callId: string;
  args: unknown;
}
export interface ToolResultItem extends ItemBase {
  kind: 'tool.result';
  callId: string;
  isError: boolean;
  output?: unknown;
  error?: unknown;
}
export interface StagedItem extends ItemBase {
  kind: 'staged';
  /** Which Shadow Booth effect: a file write, a SQL statement, a shell command, an MCP call. */
  effect: 'fs' | 'sql' | 'shell' | 'mcp';
  detail: Record<string, unknown>;
}
export interface DecisionItem extends ItemBase {
  kind: 'commit' | 'rollback' | 'breaker.trip' | 'fork';
  detail: Record<string, unknown>;
}
export interface ApprovalItem extends ItemBase {
  kind: 'approval';
  event: 'request' | 'decision' | 'timeout' | string;
  id: string;
  detail: Record<string, unknown>;
}
export interface StepEndItem extends ItemBase {
  kind: 'step.end';
  status: 'completed' | 'failed';
  /** On a failed attempt: whether Temporal retries it. */
  willRetry?: boolean;
  error?: { name?: string; message?: string; code?: string };
}
export interface SegmentItem extends ItemBase {
  kind: 'segment';
  detail: Record<string, unknown>;
}
export interface OutcomeItem extends ItemBase {
  kind: 'outcome';
  status: string;
  result?: unknown;
  error?: unknown;
}

export type RunItem =
  | StepItem
  | RequestItem
  | TokenItem
  | ResponseItem
  | ToolCallItem
  | ToolResultItem
  | StagedItem
  | DecisionItem
  | ApprovalItem
  | StepEndItem
  | SegmentItem
  | OutcomeItem;

export type RunItemKind = RunItem['kind'];

type P = Record<string, unknown>;
type Blobs = ReadonlyMap<string, TapeBlob>;

const EFFECTS = {
  'fs.mutation': 'fs',
  'sql.mutation': 'sql',
  'shell.exec': 'shell',
  'mcp.call': 'mcp',
} as const;
const IDENTITY_KEYS = new Set(['activityId', 'attempt', 'runId', 'workflowId']);

function detailOf(blobs: Blobs, p: P, omit: readonly string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) {
    if (IDENTITY_KEYS.has(k) || omit.includes(k)) continue;
    // File contents and diffs stay blob names: a follower asks for them when it shows them.
    out[k] = v instanceof BlobRef ? `blob:${v.hash}` : plainValue(blobs, v);
  }
  return out;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

/**
 * Which attempts of an activity wrote frames so far, to mark a retry's first item. Keyed by run (segment) and
 * activity id, because activity ids restart in every segment of a run that continued as new.
 */
export class AttemptBook {
  private readonly last = new Map<string, number>();

  seen(runId: string, activityId: string, attempt: number): number | undefined {
    const key = `${runId}\u0000${activityId}`;
    const before = this.last.get(key);
    if (before === undefined || attempt > before) this.last.set(key, attempt);
    return before !== undefined && before < attempt ? before : undefined;
  }
}

/** The item a frame gives, or undefined for frames a follower has no use for. */
export function itemOf(
  frame: TapeFrame,
  tape: { blobs: Blobs; attempts: AttemptBook; runId: string },
): RunItem | undefined {
  const { blobs, attempts } = tape;
  const kind = frame.kind;
  if (kind === undefined || frame.encoding !== 'msgpack') return undefined;
  const p = (frame.payload ?? {}) as P;
  const base: ItemBase = { position: frame.index, step: frame.step, recordedAtUs: frame.recordedAtUs };
  if (typeof p.activityId === 'string') base.activityId = p.activityId;
  const attempt = num(p.attempt);
  if (attempt !== undefined) base.attempt = attempt;
  const runId = typeof p.runId === 'string' ? p.runId : tape.runId;
  if (runId !== tape.runId) base.runId = runId;
  switch (kind) {
    case 'activity.start': {
      const a = attempt ?? 1;
      const retryOf = attempts.seen(runId, String(p.activityId), a);
      return {
        ...base,
        kind: 'step',
        activityType: String(p.activityType ?? ''),
        attempt: a,
        ...(retryOf !== undefined ? { retryOf } : {}),
      };
    }
    case 'llm.request':
      return { ...base, kind: 'request', provider: String(p.provider ?? ''), model: String(p.model ?? '') };
    case 'llm.chunk': {
      const chunks: TokenChunk[] = [];
      let text = '';
      for (const c of chunkEntries(p, blobs)) {
        const delta = typeof c[2] === 'string' ? c[2] : null;
        if (delta !== null) text += delta;
        chunks.push({
          seq: Number(c[0]) || 0,
          offsetMs: Number(c[1]) || 0,
          text: delta,
          ...(c.length > 3 ? { raw: plainValue(blobs, c[3]) } : {}),
        });
      }
      return { ...base, kind: 'token', text, chunks };
    }
    case 'llm.response': {
      const m = derefValue(blobs as Map<string, TapeBlob>, p.message) as
        | { content?: unknown; toolCalls?: unknown }
        | undefined;
      const u = p.usage as { inputTokens?: unknown; outputTokens?: unknown } | undefined;
      return {
        ...base,
        kind: 'response',
        text: typeof m?.content === 'string' ? m.content : '',
        toolCalls: Array.isArray(m?.toolCalls) ? (m.toolCalls as ToolCallSummary[]) : [],
        model: String(p.model ?? ''),
        stopReason: typeof p.stopReason === 'string' ? p.stopReason : null,
        usage: u
          ? { inputTokens: Number(u.inputTokens ?? 0), outputTokens: Number(u.outputTokens ?? 0) }
          : null,
        cost: typeof p.cost === 'number' ? p.cost : null,
      };
    }
    case 'tool.call':
      return {
        ...base,
        kind: 'tool.call',
        toolName: String(p.toolName ?? ''),
        callId: String(p.callId ?? ''),
        args: plainValue(blobs, p.args),
      };
    case 'tool.result': {
      const isError = p.isError === true;
      return {
        ...base,
        kind: 'tool.result',
        callId: String(p.callId ?? ''),
        isError,
        ...(isError ? { error: plainValue(blobs, p.error) } : { output: plainValue(blobs, p.output) }),
      };
    }
    case 'fs.mutation':
    case 'sql.mutation':
    case 'shell.exec':
    case 'mcp.call':
      return { ...base, kind: 'staged', effect: EFFECTS[kind], detail: detailOf(blobs, p) };
    case 'commit':
    case 'rollback':
    case 'breaker.trip':
    case 'fork':
      return { ...base, kind, detail: detailOf(blobs, p) };
    case 'approval':
      return {
        ...base,
        kind: 'approval',
        event: String(p.event ?? ''),
        id: String(p.id ?? ''),
        detail: detailOf(blobs, p, ['event', 'id']),
      };
    case 'activity.complete':
      return { ...base, kind: 'step.end', status: 'completed' };
    case 'activity.error': {
      const e = (p.error ?? {}) as P;
      return {
        ...base,
        kind: 'step.end',
        status: 'failed',
        willRetry: p.willRetry === true,
        error: {
          ...(typeof e.name === 'string' ? { name: e.name } : {}),
          ...(typeof e.message === 'string' ? { message: e.message } : {}),
          ...(typeof e.code === 'string' ? { code: e.code } : {}),
        },
      };
    }
    case 'segment':
      return { ...base, kind: 'segment', detail: detailOf(blobs, p) };
    case 'outcome':
      return {
        ...base,
        kind: 'outcome',
        status: String(p.status ?? ''),
        ...(p.result !== undefined ? { result: plainValue(blobs, p.result) } : {}),
        ...(p.error !== undefined ? { error: plainValue(blobs, p.error) } : {}),
      };
    default:
      return undefined;
  }
}
