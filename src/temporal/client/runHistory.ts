/**
 * Finds a recorded run by its Temporal ids (or its tape) and its workflow history: the history stored beside
 * the tape when there is one, else the server's, which is then stored beside the tape. The history is checked
 * to belong to the tape (alignHistory) before any event id is trusted.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal as proto, type temporal } from '@temporalio/proto';
import { TapeCatalog } from '../../recorder/catalog';
import { tapeFileName } from '../../recorder/naming';
import { ForkRequestError, HistoryMismatchError } from '../../timetravel/fork/errors';
import { alignHistory, type HistoryAlignment, type HistorySegment } from '../../timetravel/fork/historyPoint';
import { readTimeline, type Timeline } from '../../timetravel/replay/timeline';
import { fetchRunHistories } from './runChain';
import { hasStoredHistory, loadStoredHistory, storeHistory } from './storedHistory';

export interface RunHistory {
  tapeFile: string;
  timeline: Timeline;
  workflowId: string;
  runId: string;
  /** The first execution's history. */
  history: temporal.api.history.v1.IHistory;
  /** Every execution's history, first to last (a run that continued as new has several). */
  segments: HistorySegment[];
  /** Where the history came from, for messages: the stored file, or the server. */
  historySource: string;
  alignment: HistoryAlignment;
}

export interface RunHistoryRequest {
  /** The run's tape; or find it by workflowId (and runId) in tapeDir. */
  tapeFile?: string;
  workflowId?: string;
  /**
   * Default: the newest tape of workflowId in tapeDir, else the server's latest run. Any execution of a run that
   * continued as new names the run (its tape is its first execution's).
   */
  runId?: string;
  tapeDir: string;
  /** Needed only when the history is not stored beside the tape (or to find the latest run). */
  client?: Client;
  /** How to describe the server in messages, e.g. `127.0.0.1:7233 namespace jukebox`. */
  serverName?: string;
}

const isNotFound = (err: unknown) =>
  (err as { name?: string })?.name === 'WorkflowNotFoundError' ||
  /not found/i.test(String((err as Error)?.message));

async function latestRunId(r: RunHistoryRequest, workflowId: string): Promise<string> {
  const tapes = (await new TapeCatalog({ dir: r.tapeDir }).rows({ sort: 'started' })).filter(
    (t) => t.workflowId === workflowId && t.runId,
  );
  if (tapes.length) return tapes[0]!.runId!;
  const where = `${r.tapeDir} holds no tape of it`;
  if (!r.client)
    throw new ForkRequestError(
      `unknown workflow ${JSON.stringify(workflowId)}: ${where}. Pass a workflow id from \`jbx ls --dir ${r.tapeDir} --json\` (workflowId), or --dir the folder its worker recorded into`,
    );
  try {
    return (await r.client.workflow.getHandle(workflowId).describe()).runId;
  } catch (err) {
    if (!isNotFound(err)) throw err;
    throw new ForkRequestError(
      `unknown workflow ${JSON.stringify(workflowId)}: the Temporal server (${r.serverName ?? 'connected'}) has no such workflow and ${where}. ` +
        `Pass a workflow id from \`jbx ls --json\` (workflowId) or the Web UI, or --dir the folder its worker recorded into`,
      err,
    );
  }
}

export async function loadRunHistory(r: RunHistoryRequest): Promise<RunHistory> {
  let tapeFile = r.tapeFile;
  let workflowId = r.workflowId;
  let runId = r.runId;
  if (!tapeFile) {
    if (!workflowId) throw new ForkRequestError('say which run: a workflow id (--workflow-id) or a tape');
    runId ??= await latestRunId(r, workflowId);
    runId = await firstExecutionOf(r, workflowId, runId);
    tapeFile = path.join(r.tapeDir, tapeFileName(workflowId, runId));
    if (!existsSync(tapeFile))
      throw new ForkRequestError(
        `no tape of workflow ${workflowId} run ${runId} in ${r.tapeDir} (looked for ${path.basename(tapeFile)}). ` +
          'Pass --dir the folder its worker recorded into (JUKEBOX_TAPE_DIR), or a --run-id that `jbx ls --json` lists',
      );
  }
  const timeline = readTimeline(tapeFile);
  const h = timeline.tape.header;
  if (r.runId && r.tapeFile && r.runId !== h.runId && r.client)
    runId = await firstExecutionOf(r, h.workflowId, r.runId);
  if ((workflowId && workflowId !== h.workflowId) || (runId && runId !== h.runId))
    throw new ForkRequestError(
      `the tape ${tapeFile} is of workflow ${h.workflowId} run ${h.runId}, not ${workflowId ?? h.workflowId} run ${runId ?? h.runId}; pass the tape's own ids or leave them out`,
    );
  workflowId = h.workflowId;
  runId = h.runId;
  let segments: HistorySegment[];
  let historySource: string;
  if (hasStoredHistory(tapeFile)) {
    const stored = loadStoredHistory(tapeFile);
    historySource = path.join(path.dirname(tapeFile), stored.sidecar.history);
    if (stored.sidecar.workflowId !== workflowId || stored.sidecar.runId !== runId)
      throw new HistoryMismatchError(
        tapeFile,
        historySource,
        `it was stored for workflow ${stored.sidecar.workflowId} run ${stored.sidecar.runId}`,
      );
    segments = stored.segments;
  } else {
    if (!r.client)
      throw new ForkRequestError(
        `no workflow history is stored beside ${tapeFile}, and no Temporal server to fetch it from; run this while the server that ran it is up`,
      );
    historySource = `the Temporal server (${r.serverName ?? 'connected'})`;
    try {
      segments = await fetchRunHistories(r.client.workflow, workflowId, runId);
    } catch (err) {
      const why = isNotFound(err)
        ? 'does not know it'
        : `answered ${String((err as Error).message ?? err).replace(/\.$/, '')}`;
      throw new ForkRequestError(
        `no history is stored beside ${tapeFile}, and the Temporal server (${r.serverName ?? 'connected'}) asked for workflow ${workflowId} run ${runId} ${why}. ` +
          'Point JUKEBOX_TEMPORAL_ADDRESS / JUKEBOX_TEMPORAL_NAMESPACE at the server that ran it, or store the history beside the tape (captureRunHistory)',
        err,
      );
    }
    // Only a closed run's history is final; a running one is used but not stored.
    const last = segments.at(-1)?.history.events?.at(-1)?.eventType;
    if (last !== undefined && isClosing(Number(last)))
      await storeHistory(tapeFile, segments, { workflowId, runId });
  }
  return {
    tapeFile,
    timeline,
    workflowId,
    runId,
    history: segments[0]!.history,
    segments,
    historySource,
    alignment: alignHistory(timeline, segments, historySource),
  };
}

/**
 * The first execution of the run `runId` belongs to: itself, or, for a later execution of a run that continued
 * as new, the chain's first (whose tape it is), as the server tells it.
 */
async function firstExecutionOf(r: RunHistoryRequest, workflowId: string, runId: string): Promise<string> {
  if (existsSync(path.join(r.tapeDir, tapeFileName(workflowId, runId))) || !r.client) return runId;
  try {
    const d = await r.client.workflow.getHandle(workflowId, runId).describe();
    const first = d.raw.workflowExecutionInfo?.firstRunId;
    return first && existsSync(path.join(r.tapeDir, tapeFileName(workflowId, first))) ? first : runId;
  } catch (err) {
    if (isNotFound(err)) return runId;
    throw err;
  }
}

const E = proto.api.enums.v1.EventType;
const CLOSING = new Set<number>([
  E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);
function isClosing(eventType: number): boolean {
  return CLOSING.has(eventType);
}
