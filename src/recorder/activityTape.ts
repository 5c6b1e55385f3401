/**
 * The frames of one activity attempt. Frames are buffered and written in batches under the tape lock: once
 * before the step's I/O (observations, activity.start, llm.request / tool.call: what was sent, even if the
 * worker then dies) and once at its end (chunks, response or result, activity.complete / error), so a step
 * costs two lock round trips and, with the 'step' policy, one fsync. A model stream that lasts longer than
 * `streamFlushMs` also writes its chunks while it streams, one llm.chunk frame per interval, so a follower of
 * the run (src/stream, docs/streaming.md) sees tokens as they come; those frames take no fsync.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { JukeboxError } from '../errors';
import type { LlmRequest, LlmResponse, StreamChunk } from '../llm/types';
import { TapeRecordError } from './errors';
import type { Observation } from './observations';
import type { Redactor } from './redact';
import type { RunIdentity, TapeSession, TapeStore } from './store';
import { type BlobRef, type FrameKind, packChunks } from './tape';
import { errorValue, toTapeValue } from './tapeValue';
import type { RecorderTimings } from './timings';

export type PriceHook = (call: {
  provider: string;
  model: string;
  usage: LlmResponse['usage'];
}) => number | null;

export interface ActivityIdentity {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
  /**
   * A local activity: its result reaches the history only when its workflow task completes, so its closing
   * frames wait for that task's barrier fsync instead of taking one of their own.
   */
  isLocal?: boolean;
}

export interface ActivityTapeDeps {
  store: TapeStore;
  redactor: Redactor;
  costOf: PriceHook;
  nowUs: () => number;
  timings?: RecorderTimings;
  /**
   * Chunks buffered this long are written while the stream goes on (default 50 ms); `false` writes them only
   * at the step's end. A stream shorter than the interval costs one llm.chunk frame either way.
   */
  streamFlushMs?: number | false;
}

export const DEFAULT_STREAM_FLUSH_MS = 50;

type Op = (s: TapeSession) => Promise<unknown>;

const storage = new AsyncLocalStorage<ActivityTape>();

/** The tape of the activity attempt running in this async context, if recording is on. */
export function currentActivityTape(): ActivityTape | undefined {
  return storage.getStore();
}

export function runWithActivityTape<T>(tape: ActivityTape, fn: () => Promise<T>): Promise<T> {
  return storage.run(tape, fn);
}

/** Writes the observations the tape does not hold yet; shared with the outcome recorder. */
export async function writeObservations(s: TapeSession, observations: readonly Observation[], nowUs: number) {
  for (const o of observations) {
    if (o.seq <= s.observedSeq) continue;
    if (o.kind === 'random')
      await s.append({
        kind: 'random',
        step: o.step,
        recordedAtUs: nowUs,
        payload: { seq: o.seq, values: [o.value] },
      });
    else
      await s.append({
        kind: 'clock',
        step: o.step,
        recordedAtUs: nowUs,
        payload: { seq: o.seq, nowMs: o.nowMs },
      });
    s.markObserved(o.seq);
  }
}

/**
 * Blob references of arrays one activity attempt already stored, by identity: an llm step's activity.start
 * input and its llm.request frame hold the same cleaned conversation and tool specs, stored once per step.
 * The arrays are the recorder's own cleaned copies, which nothing else holds or changes.
 */
export class StoredArrays {
  private readonly refs = new WeakMap<readonly unknown[], BlobRef | null>();

  private async once(
    s: TapeSession,
    array: readonly unknown[],
    store: () => Promise<BlobRef | null>,
  ): Promise<BlobRef | null> {
    const known = this.refs.get(array);
    // A writer reopened since (another process appended) still holds the blob unless its tail was torn off.
    if (known !== undefined && (known === null || s.writer.hasBlob(known.hash))) return known;
    const ref = await store();
    this.refs.set(array, ref);
    return ref;
  }

  intern(s: TapeSession, messages: readonly unknown[], step: number): Promise<BlobRef | null> {
    return this.once(s, messages, () => s.intern(messages, step));
  }

  put(s: TapeSession, value: readonly unknown[], step: number): Promise<BlobRef | null> {
    return this.once(s, value, () => s.putValue(value, step));
  }
}

/**
 * Replaces conversation arrays by message blob references and tool specs by one blob, at the top level and
 * inside a `request`, so an activity input that resends a whole conversation costs references, not content.
 */
export async function compactConversation(
  s: TapeSession,
  value: unknown,
  step: number,
  stored: StoredArrays = new StoredArrays(),
): Promise<unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array)
    return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (Array.isArray(out.messages)) out.messages = await stored.intern(s, out.messages, step);
  if (Array.isArray(out.tools)) out.tools = await stored.put(s, out.tools, step);
  if (out.request !== undefined) out.request = await compactConversation(s, out.request, step, stored);
  return out;
}

/**
 * An llm step's result carries the same text and tool calls as its llm.response message; storing them as that
 * message blob keeps the reply on the tape once.
 */
async function compactResult(s: TapeSession, value: unknown, step: number): Promise<unknown> {
  const r = value as { text?: unknown; toolCalls?: unknown } | null;
  if (!r || typeof r !== 'object' || typeof r.text !== 'string' || !Array.isArray(r.toolCalls)) return value;
  const { text, toolCalls, ...rest } = r as Record<string, unknown>;
  return { ...rest, message: await s.putValue({ role: 'assistant', content: text, toolCalls }, step) };
}

export class ActivityTape {
  private ops: Op[] = [];
  private chunks: unknown[][] = [];
  private chunksStartUs = 0;
  // The write of the chunks streamed so far, while the stream goes on (see streamChunks).
  private streamTimer: NodeJS.Timeout | undefined;
  private streamError: unknown;
  // Flushes run one after another, in the order they were asked for: a stream write may still be under way
  // when the step's end is flushed, and its frames must come first.
  private flushed: Promise<void> = Promise.resolve();
  private readonly stored = new StoredArrays();
  // The cleaned request of an llm step's input, which its llm.request frame records again (see llmRequest).
  private startedRequest: { raw: unknown; clean: unknown } | undefined;
  readonly path: string;
  /** Time this attempt spent writing its frames, fsyncs included. */
  flushMs = 0;

  constructor(
    private readonly deps: ActivityTapeDeps,
    private readonly run: RunIdentity,
    readonly identity: ActivityIdentity,
    readonly activityType: string,
    readonly step: number,
  ) {
    this.path = deps.store.pathFor(run.workflowId, run.runId);
  }

  /**
   * Which attempt a frame belongs to. Activity ids restart with every Temporal run, so in a later segment of a
   * run that continued as new (whose tape is its first segment's) the frames also name their segment's run.
   */
  private get ids() {
    return {
      // Identity fields equal to the tape header's are left out (FORMAT.md "Payload schemas"): a reader takes
      // the header's, and two ids on every activity frame were a twentieth of a tape.
      ...(this.identity.workflowId !== this.run.workflowId ? { workflowId: this.identity.workflowId } : {}),
      activityId: this.identity.activityId,
      attempt: this.identity.attempt,
      ...(this.identity.runId !== this.run.runId ? { runId: this.identity.runId } : {}),
    };
  }

  private clean(v: unknown): unknown {
    return toTapeValue(v, this.deps.redactor);
  }

  /** The tape-safe, secret-redacted form of a value: what `effect` builders store as blobs. */
  redact(v: unknown): unknown {
    return this.clean(v);
  }

  private frame(
    kind: FrameKind,
    build: (s: TapeSession) => Promise<Record<string, unknown>> | Record<string, unknown>,
    recordedAtUs = this.deps.nowUs(),
  ) {
    if (kind !== 'llm.chunk') this.emitChunks();
    this.ops.push(async (s) => s.append({ kind, step: this.step, recordedAtUs, payload: await build(s) }));
  }

  /**
   * The chunks streamed since the last frame become one llm.chunk frame. A frame per chunk (84 bytes of head in
   * format version 2, 32 since) was half of a tape's bytes for a few bytes of text each; they reach the disk
   * together at the step's end either way, so batching loses nothing.
   */
  private emitChunks(): void {
    if (this.chunks.length === 0) return;
    const chunks = this.chunks;
    this.chunks = [];
    this.frame(
      'llm.chunk',
      async (s) => ({ ...this.ids, ...(await packChunks(chunks, s.chunkBlobs(this.step))) }),
      this.chunksStartUs,
    );
  }

  /**
   * Writes what is buffered. A failure fails the step: a step must not complete unrecorded. A local step's
   * result waits for its workflow task's barrier fsync; its errors are fsynced at once, because a retry
   * backoff can end the workflow task without the workflow reaching its barrier.
   */
  async flush(what: string, durableNow = false, streaming = false): Promise<void> {
    if (this.streamTimer) clearTimeout(this.streamTimer);
    this.streamTimer = undefined;
    this.emitChunks();
    const ops = this.ops;
    this.ops = [];
    const previous = this.flushed;
    const run = this.write(ops, previous, what, durableNow);
    // A stream write's failure is kept for the step's next flush, which is the one that fails the step.
    this.flushed = run.then(
      () => {},
      (err) => {
        if (streaming) this.streamError ??= err;
      },
    );
    await run;
  }

  private async write(ops: Op[], previous: Promise<void>, what: string, durableNow: boolean): Promise<void> {
    await previous;
    // A stream write that failed fails the step at its next flush: chunks must not go missing silently.
    if (this.streamError !== undefined) {
      const err = this.streamError;
      this.streamError = undefined;
      throw err;
    }
    if (ops.length === 0) return;
    const t0 = performance.now();
    try {
      await this.deps.store.withTape(
        this.run,
        async (s) => {
          for (const op of ops) await op(s);
        },
        undefined,
        { deferSync: this.identity.isLocal === true && !durableNow },
      );
    } catch (err) {
      // A damaged or sealed tape, or frames the format refuses, stay that way: retrying the step cannot help.
      // Anything else (a lock another process held too long, a writer that failed and is reopened next time,
      // an fsync or open that failed) may pass on the next attempt, so the step is retried, not the run ended.
      const permanent = err instanceof JukeboxError && err.nonRetryable;
      throw new TapeRecordError(this.path, what, err, permanent);
    } finally {
      const ms = performance.now() - t0;
      this.flushMs += ms;
      if (this.deps.timings) {
        this.deps.timings.flushes++;
        this.deps.timings.flushMs += ms;
      }
    }
  }

  start(input: unknown, observations: readonly Observation[]): void {
    const at = this.deps.nowUs();
    const cleanInput = this.clean(input);
    const raw = (input as { request?: unknown } | null)?.request;
    if (typeof raw === 'object' && raw !== null)
      this.startedRequest = { raw, clean: (cleanInput as { request?: unknown }).request };
    this.ops.push((s) => writeObservations(s, observations, at));
    this.frame('activity.start', async (s) => ({
      ...this.ids,
      activityType: this.activityType,
      pid: process.pid,
      input: await s.putValue(await compactConversation(s, cleanInput, this.step, this.stored), this.step),
    }));
  }

  async llmRequest(request: LlmRequest): Promise<void> {
    // The llm step passes the request its input holds, untouched since start() cleaned it: clean it once.
    const started = this.startedRequest?.raw === request ? this.startedRequest.clean : undefined;
    const r = (started ?? this.clean(request)) as Record<string, unknown>;
    this.frame('llm.request', async (s) => {
      const params: Record<string, unknown> = {};
      for (const k of ['system', 'temperature', 'maxTokens', 'stream'])
        if (r[k] !== undefined) params[k] = r[k];
      const payload: Record<string, unknown> = {
        ...this.ids,
        provider: r.provider,
        model: r.model,
        params,
        messages: await this.stored.intern(s, (r.messages as unknown[]) ?? [], this.step),
      };
      if (Array.isArray(r.tools) && r.tools.length)
        payload.tools = await this.stored.put(s, r.tools, this.step);
      return payload;
    });
    await this.flush('the model request');
  }

  llmChunk(chunk: StreamChunk): void {
    if (this.chunks.length === 0) this.chunksStartUs = this.deps.nowUs();
    const delta = chunk.text === undefined ? null : this.clean(chunk.text);
    // Text chunks are their text; the others (tool-call argument pieces, usage) only exist as raw events.
    const entry: unknown[] = [chunk.index, chunk.offsetMs, delta];
    if (chunk.text === undefined) entry.push(this.clean(chunk.raw) ?? null);
    this.chunks.push(entry);
    this.streamChunks();
  }

  /**
   * Starts the timer that writes the buffered chunks `streamFlushMs` after the first of them arrived. Only
   * chunks are pending then (the request was flushed before the stream began), so the write is one llm.chunk
   * frame, never a step-closing one.
   */
  private streamChunks(): void {
    const every = this.deps.streamFlushMs ?? DEFAULT_STREAM_FLUSH_MS;
    if (every === false || this.streamTimer) return;
    this.streamTimer = setTimeout(() => {
      this.streamTimer = undefined;
      this.flush('the streamed chunks', false, true).catch(() => {});
    }, every);
    this.streamTimer.unref?.();
  }

  llmResponse(response: LlmResponse): void {
    const r = this.clean(response) as LlmResponse;
    const cost = this.deps.costOf({
      provider: response.provider,
      model: response.model,
      usage: response.usage,
    });
    this.frame('llm.response', async (s) => ({
      ...this.ids,
      // The same shape the tool loop appends to the conversation, so the next request reuses this blob.
      message: await s.putValue({ role: 'assistant', content: r.text, toolCalls: r.toolCalls }, this.step),
      usage: r.usage,
      stopReason: r.finishReason,
      cost,
      provider: r.provider,
      model: r.model,
      responseId: r.id,
      chunks: r.chunks,
    }));
  }

  async toolCall(toolName: string, args: Record<string, unknown>): Promise<void> {
    const clean = this.clean(args);
    this.frame('tool.call', () => ({ ...this.ids, toolName, callId: this.identity.activityId, args: clean }));
    await this.flush('the tool call');
  }

  /**
   * `staging` (a Shadow Booth tool step): which attempt's staging counted, whether this attempt reused it from
   * an earlier attempt's checkpoint, and which attempt's partial staging it threw away.
   */
  toolResult(output: unknown, staging?: { attempt: number; reused: boolean; discarded?: number }): void {
    const clean = this.clean(output) ?? null;
    this.frame('tool.result', async (s) => ({
      ...this.ids,
      callId: this.identity.activityId,
      output: await s.putValue(clean, this.step),
      ...(staging ? { staging } : {}),
    }));
  }

  toolError(err: unknown): void {
    const error = errorValue(err, this.deps.redactor);
    this.frame('tool.result', () => ({
      ...this.ids,
      callId: this.identity.activityId,
      error,
      isError: true,
    }));
  }

  /**
   * A side effect of this step (fs.mutation, sql.mutation, shell.exec, mcp.call), a Shadow Booth decision
   * (commit, rollback, breaker.trip) or a person's (approval). `build` may store bulky parts as blobs through
   * the session and return their references; the frame is written with the step's next flush.
   */
  effect(
    kind: Extract<
      FrameKind,
      | 'fs.mutation'
      | 'sql.mutation'
      | 'shell.exec'
      | 'mcp.call'
      | 'commit'
      | 'rollback'
      | 'breaker.trip'
      | 'approval'
    >,
    build: (s: TapeSession) => Promise<Record<string, unknown>> | Record<string, unknown>,
  ): void {
    this.frame(kind, async (s) => ({
      ...this.ids,
      ...(this.clean(await build(s)) as Record<string, unknown>),
    }));
  }

  /** Writes the effects recorded so far now, e.g. before an irreversible commit step. */
  flushEffects(what: string): Promise<void> {
    return this.flush(what);
  }

  async complete(result: unknown): Promise<void> {
    const clean = this.clean(result) ?? null;
    this.frame('activity.complete', async (s) => ({
      ...this.ids,
      result: (await s.putValue(await compactResult(s, clean, this.step), this.step)) as BlobRef,
    }));
    await this.flush('the step result');
  }

  async fail(err: unknown, outcome: { willRetry: boolean; nonRetryable: boolean }): Promise<void> {
    const error = { ...errorValue(err, this.deps.redactor), nonRetryable: outcome.nonRetryable };
    const { willRetry } = outcome;
    this.frame('activity.error', () => ({
      ...this.ids,
      error,
      willRetry,
    }));
    await this.flush('the step error', true);
  }
}
