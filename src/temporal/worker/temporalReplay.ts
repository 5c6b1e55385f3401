/**
 * Temporal's own determinism check against a tape's stored history: the current workflow bundle is replayed
 * by `Worker.runReplayHistory`, which throws DeterminismViolationError when today's code would issue
 * different commands than the recorded run did.
 */

import path from 'node:path';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { temporal } from '@temporalio/proto';
import { type InjectedSinks, ReplayError, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { type ContentStore, contentStoreOfTapeDir } from '../../recorder/content';
import type { HistorySegment } from '../../timetravel/fork/historyPoint';
import { loadStoredHistory } from '../client/storedHistory';
import { jukeboxDataConverter } from '../content/dataConverter';
import { type TapeSinks, tapeSinks } from './tapeSinks';
import { bundleAgentWorkflows } from './workflowBundle';

/**
 * The sinks the recorded code calls, registered as no-ops: a replay records nothing, but a workflow that calls a
 * sink nobody registered makes the replayer log an ERROR (`unregistered external sink`) on a replay that passed.
 * The tape's own sinks (outcome, barrier) and the OpenTelemetry interceptors' span exporter.
 */
const REPLAY_SINKS: InjectedSinks<TapeSinks & OpenTelemetrySinks> = {
  ...tapeSinks(undefined),
  exporter: { export: { fn: () => {}, callDuringReplay: false } },
};

export interface TemporalReplayReport {
  file: string;
  workflowId: string;
  /** Events replayed, in every execution. */
  eventCount: number;
  deterministic: boolean;
  /** The replayer's complaint when not deterministic (naming the execution, for a run of several). */
  error?: string;
  durationMs: number;
  /** Each execution replayed, first to last: one, or one per segment of a run that continued as new. */
  segments: {
    runId: string;
    eventCount: number;
    deterministic: boolean;
    error?: string;
    durationMs: number;
  }[];
}

export async function replayTemporalHistory(
  tapeFile: string,
  options: ({ workflowsPath: string } | { bundle: { code: string } }) & { content?: ContentStore },
): Promise<TemporalReplayReport> {
  const { segments, sidecar } = loadStoredHistory(tapeFile);
  const workflowBundle =
    'bundle' in options ? options.bundle : await bundleAgentWorkflows(options.workflowsPath);
  // Payloads past the threshold are claims in the history: the replayer reads them from the tape folder's store.
  const content = options.content ?? contentStoreOfTapeDir(path.dirname(tapeFile));
  return replayHistoryWithCode(tapeFile, segments, sidecar.workflowId, workflowBundle, content);
}

/**
 * Temporal's replayer on a given history with given workflow code (e.g. both taken from a `.jbxb` bundle), its
 * payload claims read from `content`. A run that continued as new is replayed execution by execution: each is
 * a history of its own, the later ones starting from what the one before carried over.
 */
export async function replayHistoryWithCode(
  file: string,
  history: temporal.api.history.v1.IHistory | readonly HistorySegment[],
  workflowId: string,
  workflowBundle: { code: string },
  content?: ContentStore,
): Promise<TemporalReplayReport> {
  const segments: readonly HistorySegment[] = Array.isArray(history)
    ? history
    : [{ runId: '', history: history as temporal.api.history.v1.IHistory }];
  const report: TemporalReplayReport = {
    file,
    workflowId,
    eventCount: 0,
    deterministic: true,
    durationMs: 0,
    segments: [],
  };
  const dataConverter = content ? { dataConverter: jukeboxDataConverter({ store: content }) } : {};
  for (const seg of segments) {
    const t0 = performance.now();
    const one: TemporalReplayReport['segments'][number] = {
      runId: seg.runId,
      eventCount: seg.history.events?.length ?? 0,
      deterministic: true,
      durationMs: 0,
    };
    try {
      await Worker.runReplayHistory(
        { workflowBundle, sinks: REPLAY_SINKS, ...dataConverter },
        seg.history,
        workflowId,
      );
    } catch (err) {
      // ReplayError: the workflow task failed on replay (e.g. code that now throws); also "not compatible".
      if (!(err instanceof DeterminismViolationError) && !(err instanceof ReplayError)) throw err;
      one.deterministic = false;
      one.error = err.message;
    }
    one.durationMs = performance.now() - t0;
    report.segments.push(one);
    report.eventCount += one.eventCount;
    report.durationMs += one.durationMs;
    if (!one.deterministic && report.deterministic) {
      report.deterministic = false;
      report.error = segments.length > 1 ? `execution ${seg.runId}: ${one.error}` : one.error;
    }
  }
  return report;
}
