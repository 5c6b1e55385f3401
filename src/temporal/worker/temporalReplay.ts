/**
 * Temporal's own determinism check against a tape's stored history: the current workflow bundle is replayed
 * by `Worker.runReplayHistory`, which throws DeterminismViolationError when today's code would issue
 * different commands than the recorded run did.
 */

import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { ReplayError, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { type ContentStore, contentStoreOfTapeDir } from '../../recorder/content';
import { loadStoredHistory } from '../client/storedHistory';
import { jukeboxDataConverter } from '../content/dataConverter';
import { bundleAgentWorkflows } from './workflowBundle';

export interface TemporalReplayReport {
  file: string;
  workflowId: string;
  eventCount: number;
  deterministic: boolean;
  /** The replayer's complaint when not deterministic. */
  error?: string;
  durationMs: number;
}

export async function replayTemporalHistory(
  tapeFile: string,
  options: ({ workflowsPath: string } | { bundle: { code: string } }) & { content?: ContentStore },
): Promise<TemporalReplayReport> {
  const { history, sidecar } = loadStoredHistory(tapeFile);
  const workflowBundle =
    'bundle' in options ? options.bundle : await bundleAgentWorkflows(options.workflowsPath);
  // Payloads past the threshold are claims in the history: the replayer reads them from the tape folder's store.
  const content = options.content ?? contentStoreOfTapeDir(path.dirname(tapeFile));
  return replayHistoryWithCode(tapeFile, history, sidecar.workflowId, workflowBundle, content);
}

/**
 * Temporal's replayer on a given history with given workflow code (e.g. both taken from a `.jbxb` bundle), its
 * payload claims read from `content`.
 */
export async function replayHistoryWithCode(
  file: string,
  history: temporal.api.history.v1.IHistory,
  workflowId: string,
  workflowBundle: { code: string },
  content?: ContentStore,
): Promise<TemporalReplayReport> {
  const t0 = performance.now();
  const report: TemporalReplayReport = {
    file,
    workflowId,
    eventCount: history.events?.length ?? 0,
    deterministic: true,
    durationMs: 0,
  };
  try {
    await Worker.runReplayHistory(
      {
        workflowBundle,
        ...(content ? { dataConverter: jukeboxDataConverter({ store: content }) } : {}),
      },
      history,
      workflowId,
    );
  } catch (err) {
    // ReplayError: the workflow task failed on replay (e.g. code that now throws); also "not compatible".
    if (!(err instanceof DeterminismViolationError) && !(err instanceof ReplayError)) throw err;
    report.deterministic = false;
    report.error = err.message;
  }
  report.durationMs = performance.now() - t0;
  return report;
}
