/**
 * The worker-wide recorder: owns the tape store, the redactor and the price hook, and hands out one
 * ActivityTape per activity attempt.
 */
import { loadPriceBook, type PriceBook, UnknownModelPriceError } from '../llm/pricing';
import { ActivityTape, type PriceHook, writeObservations } from './activityTape';
import type { EndedRunOutcome, RecordOutcomeInput, RecordSegmentInput } from './observations';
import { type RedactionOptions, Redactor } from './redact';
import type { RunIdentity, TapeStore, TapeStoreOptions } from './store';
import { tapeStoreFromEnv } from './storeFromEnv';
import { errorValue, toTapeValue } from './tapeValue';
import type { RecorderTimings } from './timings';

/**
 * What the recorder reads of an activity's identity: the fields of Temporal's activity Info it uses, so an Info
 * is one (the recorder itself stays free of the Temporal SDK).
 */
export interface ActivityIdentity {
  workflowExecution?: { workflowId: string; runId: string };
  workflowType?: string;
  taskQueue: string;
  activityId: string;
  attempt: number;
  activityType: string;
}

export interface TapeRecorderOptions extends TapeStoreOptions {
  /** The store to record into; default: `dir` when given, else the one `JUKEBOX_TAPE_STORE` names (storeFromEnv). */
  store?: TapeStore;
  redaction?: RedactionOptions;
  /**
   * Price table hook: the cost of one model call in USD, or null when unknown. The default prices calls with
   * the project's dated price table (src/llm/pricing/, overridable with `JUKEBOX_PRICE_TABLE`); a model the table does
   * not list is recorded with `cost: null`, since a missing price must not fail the step it describes.
   */
  costOf?: PriceHook;
  /** The price book the default hook uses; loaded from src/llm/pricing/ (and `JUKEBOX_PRICE_TABLE`) when omitted. */
  prices?: PriceBook;
  /** Goes into every tape header; createJukeboxWorker sets it to the workflow bundle's hash. */
  agentCodeHash?: string;
  /** Clock for recordedAtUs, microseconds since the epoch (tests). */
  nowUs?: () => number;
  /**
   * How long a model stream's chunks wait before they are written while it streams (default 50 ms), so that
   * followers of the run see tokens live (docs/streaming.md); `false`: only at the step's end.
   */
  streamFlushMs?: number | false;
}

const defaultNowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

function pricedBy(book: PriceBook): PriceHook {
  return (call) => {
    try {
      return book.costOf(call);
    } catch (err) {
      if (err instanceof UnknownModelPriceError) return null;
      throw err;
    }
  };
}

export class TapeRecorder {
  readonly store: TapeStore;
  readonly redactor: Redactor;
  readonly agentCodeHash: string;
  private readonly costOf: PriceHook;
  private readonly nowUs: () => number;
  readonly timings: RecorderTimings | undefined;
  private readonly streamFlushMs: number | false | undefined;

  constructor(options: TapeRecorderOptions = {}) {
    this.store = options.store ?? tapeStoreFromEnv(options);
    this.redactor = new Redactor(options.redaction);
    this.agentCodeHash = options.agentCodeHash ?? 'unknown';
    this.costOf = options.costOf ?? pricedBy(options.prices ?? loadPriceBook());
    this.nowUs = options.nowUs ?? defaultNowUs;
    this.timings = options.timings;
    this.streamFlushMs = options.streamFlushMs;
  }

  /**
   * The run whose tape an activity writes: its workflow's, or for a later segment of a run that continued as
   * new, the run named by `runKey` (its first segment's id), so every segment appends to one tape.
   */
  runOf(
    info: Pick<ActivityIdentity, 'workflowExecution' | 'workflowType' | 'taskQueue'>,
    runKey?: string,
  ): RunIdentity {
    return {
      workflowId: info.workflowExecution?.workflowId ?? 'no-workflow',
      runId: runKey ?? info.workflowExecution?.runId ?? 'no-run',
      workflowType: info.workflowType ?? '',
      taskQueue: info.taskQueue,
      agentCodeHash: this.agentCodeHash,
    };
  }

  forActivity(
    info: Pick<
      ActivityIdentity,
      'workflowExecution' | 'workflowType' | 'taskQueue' | 'activityId' | 'attempt' | 'activityType'
    > & { isLocal?: boolean },
    step: number,
    runKey?: string,
  ): ActivityTape {
    const run = this.runOf(info, runKey);
    return new ActivityTape(
      {
        store: this.store,
        redactor: this.redactor,
        costOf: this.costOf,
        nowUs: this.nowUs,
        ...(this.timings ? { timings: this.timings } : {}),
        ...(this.streamFlushMs !== undefined ? { streamFlushMs: this.streamFlushMs } : {}),
      },
      run,
      {
        // The frames name the segment's own run: FORMAT.md lets them differ from the header's.
        workflowId: run.workflowId,
        runId: info.workflowExecution?.runId ?? run.runId,
        activityId: info.activityId,
        attempt: info.attempt,
        ...(info.isLocal ? { isLocal: true } : {}),
      },
      info.activityType,
      step,
    );
  }

  /** Writes the last observations and the outcome, then seals. A tape that is already sealed is left alone. */
  async recordOutcome(
    info: Pick<ActivityIdentity, 'workflowExecution' | 'workflowType' | 'taskQueue'>,
    input: RecordOutcomeInput,
    runKey?: string,
  ): Promise<{ sealed: boolean; path: string }> {
    const run = this.runOf(info, runKey);
    const path = this.store.pathFor(run.workflowId, run.runId);
    const at = this.nowUs();
    const sealed = await this.store.withTape(run, async (s) => {
      if (s.sealed) return false;
      await writeObservations(s, input.observations ?? [], at);
      const outcome: Record<string, unknown> = { status: input.status };
      // The last segment of a run that continued as new names its own run (FORMAT.md, `segment`).
      const segmentRun = info.workflowExecution?.runId;
      if (segmentRun && segmentRun !== run.runId) outcome.runId = segmentRun;
      if (input.result !== undefined)
        outcome.result = await s.putValue(toTapeValue(input.result, this.redactor) ?? null, input.step);
      if (input.error) outcome.error = toTapeValue(input.error, this.redactor);
      await s.seal(outcome, input.step);
      return true;
    });
    return { sealed, path };
  }

  /**
   * The end of a segment of a run that continues as new: the last readings, then a `segment` frame saying why
   * and what the segment's history held. A retried call (the workflow task that continues was lost) writes the
   * same frame again; readers take a segment's first.
   */
  async recordSegment(
    info: Pick<ActivityIdentity, 'workflowExecution' | 'workflowType' | 'taskQueue'>,
    input: RecordSegmentInput,
    runKey?: string,
  ): Promise<{ path: string }> {
    const run = this.runOf(info, runKey);
    const at = this.nowUs();
    await this.store.withTape(run, async (s) => {
      await writeObservations(s, input.observations ?? [], at);
      await s.append({
        kind: 'segment',
        step: input.step,
        recordedAtUs: at,
        payload: {
          runId: info.workflowExecution?.runId ?? run.runId,
          segment: input.segment,
          nextStep: input.step,
          reason: input.reason,
          historyEvents: input.historyEvents,
          historyBytes: input.historyBytes,
        },
      });
    });
    return { path: this.store.pathFor(run.workflowId, run.runId) };
  }

  /**
   * Seals the tape of a run whose workflow code never got to (the server terminated it, it timed out, it was
   * reset): `discard` runs first, under the tape's lock, and what it returns is recorded as the run's rollback;
   * then the outcome. Nothing happens to a tape that is already sealed or that the store does not hold.
   */
  async sealEndedRun(
    run: RunIdentity,
    end: EndedRunOutcome,
    discard?: () => Promise<Record<string, unknown> | null>,
  ): Promise<'sealed' | 'already-sealed' | 'no-tape'> {
    if (!(await this.store.has(run.workflowId, run.runId))) {
      await discard?.();
      return 'no-tape';
    }
    return this.store.withTape(run, async (s) => {
      const rollback = await discard?.();
      if (s.sealed) return 'already-sealed';
      // After the last step the run recorded: the step it was in when it ended.
      const step = Math.max(0, s.writer.lastStep);
      const at = this.nowUs();
      if (rollback) await s.append({ kind: 'rollback', step, recordedAtUs: at, payload: rollback });
      const outcome: Record<string, unknown> = {
        status: end.status,
        error: toTapeValue(end.error, this.redactor),
        sweptAtMs: Math.floor(at / 1000),
      };
      if (end.runId && end.runId !== run.runId) outcome.runId = end.runId;
      await s.seal(outcome, step);
      return 'sealed';
    });
  }

  /**
   * The barrier after a workflow task's local steps (the workflow calls it through the jukeboxTape sink
   * before the command that ends the task): their frames are fsynced before the task's completion puts their
   * results into the history.
   */
  async barrier(workflowId: string, runId: string): Promise<void> {
    await this.store.barrier?.(workflowId, runId);
  }

  describeError(err: unknown) {
    return errorValue(err, this.redactor);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
