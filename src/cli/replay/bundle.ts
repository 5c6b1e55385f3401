/**
 * `jbx replay report.jbxb` (and `--temporal`): replays a bundle with the workflow code inside it, so neither
 * the agent's source nor a Temporal server is needed; the code is the very code that recorded the run.
 */
import type { OpenedBundle } from '../../timetravel/bundle';
import { agentFromWorkflowCode } from '../../timetravel/bundle';
import { AgentCodeNotFoundError, replayTape } from '../../timetravel/replay';
import { ExitCode, ExitError } from '../exitError';
import type { Output } from '../output';
import { openBundleOrExit } from '../verify/bundle';
import { replayBundledHistory } from './plainWorkflowBundle';
import { eventsOf, renderReplayReport } from './render';

export async function replayBundle(file: string, temporal: boolean, out: Output): Promise<void> {
  const b = openBundleOrExit(file);
  const h = b.tape.header;
  const codeNote = { recorded: h.agentCodeHash, current: h.agentCodeHash, matches: true, source: 'bundle' };
  if (temporal) return replayBundleHistory(b, codeNote, out);
  let agent: ReturnType<typeof agentFromWorkflowCode>;
  try {
    agent = agentFromWorkflowCode(b.workflowCode, h.workflowType, `${file}#workflow-bundle.js`);
  } catch (err) {
    if (!(err instanceof AgentCodeNotFoundError)) throw err;
    // A plain Temporal workflow recorded by the plugin has no agent body to re-run against its tape: its replay
    // is Temporal's own, of the bundled code against the bundled history, which needs no server either.
    if (!b.history)
      throw new ExitError(
        ExitCode.failed,
        `${file} holds a plain Temporal workflow (${h.workflowType}, not a Jukebox agent) and no workflow history (it was made with --no-history): there is nothing to replay it against. Show it with jbx show ${file}, or bundle the run again while its server is up`,
        err,
      );
    out.info(
      `${h.workflowType} is a plain Temporal workflow, not a Jukebox agent: replaying the bundled code against the bundled history (as --temporal does)`,
    );
    return replayBundleHistory(b, codeNote, out);
  }
  const report = await replayTape(b.tape, { agent, timeline: b.timeline });
  const module = `${file}#workflow-bundle.js`;
  out.result(renderReplayReport(report, module, process.stdout.columns || 100), {
    ...report,
    agentModule: module,
    code: codeNote,
  });
  if (report.status === 'diverged') {
    const d = report.divergence!;
    throw new ExitError(
      ExitCode.failed,
      `replay diverged at step ${d.step} (frame ${d.frame}, ${d.kind}): ${d.fields.join(', ')}`,
    );
  }
}

/** Temporal's replayer: the bundle's own workflow code against the histories it carries. */
async function replayBundleHistory(b: OpenedBundle, codeNote: object, out: Output): Promise<void> {
  const file = b.file;
  if (!b.history)
    throw new ExitError(
      ExitCode.failed,
      `bundle ${file} holds no workflow history (it was made with --no-history); replay it without --temporal, or bundle the run again while its server is up`,
    );
  const report = await replayBundledHistory(b);
  out.result(
    report.deterministic
      ? `temporal replay of ${file}: deterministic (${eventsOf(report)}, ${report.durationMs.toFixed(0)} ms, the bundle's own workflow code)`
      : `temporal replay of ${file}: NOT deterministic\n  ${report.error}`,
    { ...report, code: codeNote },
  );
  if (!report.deterministic)
    throw new ExitError(
      ExitCode.failed,
      `the bundled workflow code is not deterministic against its history`,
    );
}
