/**
 * A standalone tape of model calls, one per session (a proxy client, a script outside Temporal): a normal
 * `.jbx` in a TapeStore folder whose header names the session as its workflow id, each call one step of
 * llm.request / llm.chunk / llm.response frames like the recorder writes, so `jbx ls / show / verify` read it.
 */
import { randomUUID } from 'node:crypto';
import type { BreakerTrip } from '../breaker/trip';
import type { LlmResponse } from '../llm/types';
import { Redactor, type RunIdentity, type StoreFsyncPolicy, TapeStore, toTapeValue } from '../recorder';
import { packChunks } from '../recorder/tape';
import type { ChunkRaw, ExchangeSink } from './exchangeSink';
import type { WireRequestFields } from './wire';

export interface SessionTapeOptions {
  dir?: string;
  session: string;
  /** Default: a fresh id, so each recording of a session is its own tape. */
  runId?: string;
  redactor?: Redactor;
  /** Default 'step': each answered call is on disk before the client gets its last byte. */
  fsync?: StoreFsyncPolicy;
}

export class SessionTape {
  readonly store: TapeStore;
  readonly run: RunIdentity;
  readonly path: string;
  private nextStep = 0;
  private closed = false;
  private tripped: BreakerTrip | undefined;
  private readonly redactor: Redactor;

  constructor(options: SessionTapeOptions) {
    this.store = new TapeStore({ dir: options.dir, fsync: options.fsync });
    this.run = {
      workflowId: options.session,
      runId: options.runId ?? randomUUID(),
      workflowType: 'jbx.proxy',
      taskQueue: '',
      agentCodeHash: '',
    };
    this.path = this.store.pathFor(this.run.workflowId, this.run.runId);
    this.redactor = options.redactor ?? new Redactor();
  }

  get calls(): number {
    return this.nextStep;
  }

  /** A sink for one call; calls of a session may overlap, each keeps its own step. */
  begin(): ExchangeSink {
    const step = this.nextStep++;
    const chunks: unknown[][] = [];
    let provider = '';
    let startUs = 0;
    const clean = (v: unknown) => toTapeValue(v, this.redactor);
    const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
    const writeChunks = async (s: Parameters<Parameters<TapeStore['withTape']>[1]>[0]) => {
      // Taken out as written, so a call that ends twice (answered, then cancelled) cannot record them twice.
      const batch = chunks.splice(0);
      if (batch.length)
        await s.append({
          kind: 'llm.chunk',
          step,
          recordedAtUs: startUs,
          payload: await packChunks(batch, s.chunkBlobs(step)),
        });
    };
    return {
      request: (fields: WireRequestFields, route: string) =>
        this.store.withTape(this.run, async (s) => {
          provider = fields.provider;
          const f = clean(fields) as Record<string, unknown>;
          const params: Record<string, unknown> = {};
          for (const k of ['system', 'temperature', 'maxTokens', 'stream'])
            if (f[k] !== undefined) params[k] = f[k];
          const payload: Record<string, unknown> = {
            provider: f.provider,
            model: f.model,
            route,
            params,
            messages: await s.intern((f.messages as unknown[]) ?? [], step),
          };
          if (Array.isArray(f.tools)) payload.tools = await s.putValue(f.tools, step);
          await s.append({ kind: 'llm.request', step, recordedAtUs: nowUs(), payload });
        }),
      chunk: (index: number, offsetMs: number, raw: ChunkRaw, text: string | undefined) => {
        if (chunks.length === 0) startUs = nowUs();
        chunks.push([index, offsetMs, text === undefined ? null : clean(text), clean(raw)]);
      },
      response: (summary: LlmResponse, status: number) =>
        this.store.withTape(this.run, async (s) => {
          await writeChunks(s);
          const r = clean(summary) as LlmResponse;
          await s.append({
            kind: 'llm.response',
            step,
            recordedAtUs: nowUs(),
            payload: {
              message: await s.putValue({ role: 'assistant', content: r.text, toolCalls: r.toolCalls }, step),
              usage: r.usage,
              stopReason: r.finishReason,
              provider: r.provider,
              model: r.model,
              responseId: r.id,
              chunks: r.chunks,
              status,
            },
          });
        }),
      failed: (error) =>
        this.store.withTape(this.run, async (s) => {
          await writeChunks(s);
          await s.append({
            kind: 'llm.response',
            step,
            recordedAtUs: nowUs(),
            payload: { provider, error: clean(error) as Record<string, unknown> },
          });
        }),
    };
  }

  /**
   * The circuit breaker opened on this session: a breaker.trip frame (same payload as a workflow's) on the last
   * answered call's step, and the tape will be sealed as failed with BREAKER_TRIPPED.
   */
  recordTrip(trip: BreakerTrip): Promise<void> {
    this.tripped = trip;
    const step = Math.max(0, this.nextStep - 1);
    return this.store.withTape(this.run, async (s) => {
      await s.append({
        kind: 'breaker.trip',
        step,
        recordedAtUs: Math.round((performance.timeOrigin + performance.now()) * 1000),
        payload: {
          detector: trip.detector,
          track: trip.track,
          reason: trip.reason,
          evidence: toTapeValue(trip.evidence, this.redactor) as Record<string, unknown>,
          spend: { usd: trip.spendUsd },
        },
      });
    });
  }

  /** Seals the tape (outcome `completed`) if anything was recorded; a session with no call leaves no file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.nextStep > 0)
      await this.store.withTape(this.run, (s) =>
        s.sealed
          ? Promise.resolve()
          : s
              .seal(
                this.tripped
                  ? {
                      status: 'failed',
                      error: {
                        name: 'BreakerTrippedError',
                        code: 'BREAKER_TRIPPED',
                        message: this.tripped.reason,
                      },
                    }
                  : { status: 'completed', result: { calls: this.nextStep } },
                this.nextStep,
              )
              .then(() => {}),
      );
    await this.store.close();
  }
}
