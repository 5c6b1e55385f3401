/**
 * The recorded model calls of a tape, served back in place of the network.
 *
 * Matching rule: an incoming request is answered by the earliest recorded call, not yet served, whose
 * canonical request (provider, model, system, messages, tools, temperature, max tokens, stream; see
 * `requestKey`) equals it. Each recorded call answers once, so a conversation that asks the same thing twice
 * gets both recorded answers in order; calls whose answer never arrived (upstream down, broken stream) are
 * not served.
 */
import path from 'node:path';
import type { Provider } from '../llm/types';
import {
  chunkEntries,
  derefValue,
  readTape,
  resolveMessages,
  type Tape,
  type TapeFrame,
} from '../recorder/tape';
import { ReplayTapeError, ReplayUnmatchedError } from './errors';
import { describeRequest, requestKey, type WireRequestFields, type WireResponse } from './wire';

export interface RecordedCall {
  step: number;
  frameIndex: number;
  fields: WireRequestFields;
  key: string;
  response: WireResponse;
}

type Payload = Record<string, unknown>;

function groupOf(f: TapeFrame): string {
  const p = f.payload as Payload;
  return `${f.step}/${String(p.activityId ?? '')}/${String(p.attempt ?? '')}`;
}

/** Rebuilds a recorded answer from its chunks' wire forms; undefined if they are not wire-level. */
function responseOf(chunks: unknown[][], status: number): WireResponse | undefined {
  const raws = chunks.map((c) => c[3] as Payload | null | undefined);
  if (raws.length === 1 && typeof raws[0]?.body === 'string') {
    const r = raws[0];
    return {
      kind: 'json',
      status: typeof r.status === 'number' ? r.status : status,
      contentType: String(r.contentType || 'application/json'),
      body: r.body as string,
    };
  }
  if (raws.length === 0 || raws.some((r) => typeof r?.data !== 'string')) return undefined;
  return {
    kind: 'sse',
    status,
    events: raws.map((r, i) => ({
      ...(typeof r?.event === 'string' ? { event: r.event } : {}),
      data: r?.data as string,
      offsetMs: Number(chunks[i]?.[1]) || 0,
    })),
  };
}

/** Every wire-level call on the tape that got an answer, in recording order (by its request frame). */
export function recordedCalls(tape: Tape): RecordedCall[] {
  const open = new Map<string, { frame: TapeFrame; fields: WireRequestFields; chunks: unknown[][] }>();
  const calls: RecordedCall[] = [];
  for (const f of tape.frames) {
    if (f.kind !== 'llm.request' && f.kind !== 'llm.chunk' && f.kind !== 'llm.response') continue;
    const p = f.payload as Payload;
    const group = groupOf(f);
    if (f.kind === 'llm.request') {
      const params = (p.params ?? {}) as Payload;
      const fields: WireRequestFields = {
        provider: p.provider as Provider,
        model: String(p.model ?? ''),
        messages: resolveMessages(tape, p.messages as never),
      };
      for (const k of ['system', 'temperature', 'maxTokens', 'stream'] as const)
        if (params[k] !== undefined) (fields as unknown as Payload)[k] = params[k];
      const tools = derefValue(tape, p.tools ?? undefined);
      if (Array.isArray(tools)) fields.tools = tools;
      open.set(group, { frame: f, fields, chunks: [] });
      continue;
    }
    const pending = open.get(group);
    if (!pending) continue;
    if (f.kind === 'llm.chunk') {
      pending.chunks.push(...chunkEntries(p, tape.blobs));
      continue;
    }
    open.delete(group);
    if (p.error !== undefined) continue;
    const response = responseOf(pending.chunks, typeof p.status === 'number' ? p.status : 200);
    if (!response) continue;
    calls.push({
      step: f.step,
      frameIndex: pending.frame.index,
      fields: pending.fields,
      key: requestKey(pending.fields),
      response,
    });
  }
  return calls.sort((a, b) => a.frameIndex - b.frameIndex);
}

/** The serving state of one replay: which recorded calls are still unanswered. */
export class ReplayBook {
  private readonly served: boolean[];
  readonly name: string;

  constructor(
    readonly calls: RecordedCall[],
    readonly tapePath: string,
  ) {
    this.served = calls.map(() => false);
    this.name = path.basename(tapePath);
  }

  static fromTape(source: string | Tape): ReplayBook {
    if (typeof source !== 'string') return new ReplayBook(recordedCalls(source), source.header.tapeId);
    let tape: Tape;
    try {
      tape = readTape(source);
    } catch (err) {
      throw new ReplayTapeError(source, err instanceof Error ? err.message : String(err), err);
    }
    return new ReplayBook(recordedCalls(tape), source);
  }

  get remaining(): number {
    return this.served.filter((s) => !s).length;
  }

  /** The recorded answer for a request, or ReplayUnmatchedError naming the tape and the request. */
  take(fields: WireRequestFields): RecordedCall {
    const key = requestKey(fields);
    const i = this.calls.findIndex((c, n) => !this.served[n] && c.key === key);
    if (i >= 0) {
      this.served[i] = true;
      return this.calls[i] as RecordedCall;
    }
    const next = this.calls.find((_, n) => !this.served[n]);
    const detail =
      this.calls.length === 0
        ? 'the tape holds no recorded model calls'
        : next
          ? `${this.remaining} of ${this.calls.length} recorded calls are unserved; the next one (step ${next.step}) ` +
            `asked ${JSON.stringify(describeRequest(next.fields))}`
          : `all ${this.calls.length} recorded calls were already served`;
    throw new ReplayUnmatchedError(this.tapePath, describeRequest(fields), detail);
  }
}
