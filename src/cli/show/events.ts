/**
 * `jbx show TAPE --events`: each step of the tape with the ids of its Temporal history events, so what the
 * Temporal Web UI shows lines up with the tape (and `jbx fork --event N` can be given any of those ids).
 */
import { TapeError } from '../../recorder/tape';
import { loadRunHistory, withTemporal } from '../../temporal';
import { hasStoredHistory } from '../../temporal/client/storedHistory';
import { temporalConfigFromEnv } from '../../temporal/config';
import { ForkRequestError, HistoryMismatchError, type StepEvents } from '../../timetravel/fork';
import { ExitCode, ExitError } from '../exitError';
import type { Output } from '../output';
import { headerFailure } from '../verify/tapeArgument';

function stepLine(s: StepEvents): string {
  const head = `step ${String(s.step).padStart(3)}  ${s.kind.padEnd(4)}  activity ${s.activityId}`;
  if (s.inherited) return `${head}  from the parent tape (no events in this run)`;
  const events = s.events
    .map((e) => `${e.id} ${e.type}${e.attempt !== undefined ? ` (attempt ${e.attempt})` : ''}`)
    .join(', ');
  return `${head}  events ${s.first}..${s.last}: ${events}`;
}

export async function showEvents(file: string, tapeDir: string, out: Output): Promise<void> {
  try {
    const temporal = temporalConfigFromEnv();
    const request = {
      tapeFile: file,
      tapeDir,
      serverName: `${temporal.address} namespace ${temporal.namespace}`,
    };
    // The stored history needs no server; only a tape without one asks the server that ran it.
    const run = hasStoredHistory(file)
      ? await loadRunHistory(request)
      : await withTemporal(({ client }) => loadRunHistory({ ...request, client }), temporal);
    const a = run.alignment;
    // A run that continued as new: each execution's steps under it, with its own event ids (from 1).
    const several = a.segments.length > 1;
    const body = several
      ? a.segments.flatMap((seg, i) => [
          `execution ${i} run ${seg.runId}: events 1..${seg.lastEventId}`,
          ...a.steps.filter((s) => s.runId === seg.runId).map(stepLine),
          '',
        ])
      : a.steps.map(stepLine);
    const human = [
      `tape ${file}`,
      several
        ? `workflow ${run.workflowId} run ${run.runId}, continued as new ${a.segments.length - 1} times; history from ${run.historySource}`
        : `workflow ${run.workflowId} run ${run.runId}; history from ${run.historySource}, events 1..${a.lastEventId}`,
      '',
      ...body,
    ]
      .join('\n')
      .trimEnd();
    out.result(human, {
      file,
      workflowId: run.workflowId,
      runId: run.runId,
      historySource: run.historySource,
      eventCount: a.eventCount,
      steps: a.steps,
      events: a.events,
      segments: a.segments,
    });
  } catch (err) {
    if (err instanceof TapeError) throw headerFailure(file, err);
    if (err instanceof ForkRequestError || err instanceof HistoryMismatchError)
      throw new ExitError(ExitCode.failed, err.message, err);
    if (err instanceof Error && /connect|ECONNREFUSED|unavailable/i.test(err.message))
      throw new ExitError(
        ExitCode.failed,
        `no workflow history is stored beside ${file}, and the Temporal server did not answer (${err.message}); start it, or point JUKEBOX_TEMPORAL_ADDRESS at the server that ran the workflow`,
        err,
      );
    throw err;
  }
}
