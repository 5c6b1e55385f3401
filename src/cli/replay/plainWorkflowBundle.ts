/**
 * A plain Temporal workflow's bundle in a replay suite (`jbx replay DIR`): its code has no Jukebox agent to
 * re-run against the tape, so its replay is Temporal's own, the bundled code against the bundled history, as
 * `jbx replay X.jbxb` does for one file. Runs in the suite's main thread: Temporal's replayer is not one the
 * suite's worker threads load.
 */
import { MemoryContentStore } from '../../recorder/content';
import { installStderrRuntime, replayHistoryWithCode } from '../../temporal';
import { type OpenedBundle, openBundle } from '../../timetravel/bundle';
import { type TapeReplayResult, timedReplay } from '../../timetravel/replay/suite';

/** Temporal's replayer: the bundle's own workflow code against the histories it carries (one or more). */
export function replayBundledHistory(b: OpenedBundle) {
  installStderrRuntime();
  // Payload claims in the histories resolve from the blobs the bundle carries, not from any deployment's store.
  return replayHistoryWithCode(
    b.file,
    b.histories,
    b.tape.header.workflowId,
    { code: b.workflowCode },
    new MemoryContentStore(b.content, `${b.file}#content.pack`),
  );
}

export function replayPlainWorkflowBundle(file: string): Promise<TapeReplayResult> {
  return timedReplay(file, async (result) => {
    const b = openBundle(file);
    const h = b.tape.header;
    result.workflowType = h.workflowType;
    result.recordedOutcome = b.timeline.outcome?.status ?? null;
    const module = `${file}#workflow-bundle.js`;
    result.code = { source: 'bundle', module };
    if (!b.history) {
      result.error = {
        code: 'BUNDLE_HAS_NO_HISTORY',
        message:
          `${file} holds a plain Temporal workflow (${h.workflowType}, not a Jukebox agent) and no workflow history ` +
          '(it was made with --no-history): there is nothing to replay it against; bundle the run again while its ' +
          'server is up',
      };
    } else {
      const report = await replayBundledHistory(b);
      result.status = report.deterministic ? 'match' : 'diverged';
      result.history = {
        events: report.eventCount,
        deterministic: report.deterministic,
        ...(report.error !== undefined ? { error: report.error } : {}),
      };
      if (!report.deterministic)
        result.error = {
          code: 'TEMPORAL_NONDETERMINISM',
          message: `the bundled workflow code is not deterministic against its history: ${report.error}`,
        };
    }
  });
}
