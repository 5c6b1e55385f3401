/**
 * `jbx replay TAPE`: re-executes the agent's code offline with every step answered from the tape and audits
 * each request; `--temporal` runs Temporal's replayer on the workflow history stored beside the tape.
 */
import { TapeError } from '../../recorder/tape';
import {
  type CodeCheck,
  checkAgentCode,
  describeCodeCheck,
  fetchHistoryBesideTape,
  hasStoredHistory,
  installStderrRuntime,
  replayTemporalHistory,
} from '../../temporal';
import { temporalConfigFromEnv } from '../../temporal/config';
import { bundleAgentWorkflows } from '../../temporal/worker/workflowBundle';
import { isBundleFile } from '../../timetravel/bundle/format';
import {
  AgentCodeNotFoundError,
  HistoryMissingError,
  loadProjectConfig,
  locateAgent,
  ProjectConfigError,
  readTimeline,
  replayTape,
  TapeNotReplayableError,
  type Timeline,
} from '../../timetravel/replay';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError } from '../exitError';
import { headerFailure, resolveStoredTape } from '../verify/tapeArgument';
import { replayBundle } from './bundle';
import { renderReplayReport } from './render';

const USAGE =
  'jbx replay TAPE|BUNDLE.jbxb [--temporal] [--project DIR] [--skip-code-check] [--dir D] [--json]';

export function readTimelineOrExit(file: string): Timeline {
  try {
    return readTimeline(file);
  } catch (err) {
    if (err instanceof TapeError) throw headerFailure(file, err);
    throw err;
  }
}

/** Typed errors of replay become "operation failed" with their own message, which says what to do. */
export function failed(err: unknown): never {
  if (
    err instanceof AgentCodeNotFoundError ||
    err instanceof ProjectConfigError ||
    err instanceof TapeNotReplayableError ||
    err instanceof HistoryMissingError
  )
    throw new ExitError(ExitCode.failed, err.message, err);
  throw err;
}

async function fetchHistoryInto(file: string, t: Timeline): Promise<void> {
  const h = t.tape.header;
  const config = temporalConfigFromEnv();
  try {
    await fetchHistoryBesideTape(file, { workflowId: h.workflowId, runId: h.runId }, config);
  } catch (err) {
    throw new HistoryMissingError(
      file,
      `and fetching it from ${config.address} failed: ${(err as Error).message}`,
      err,
    );
  }
}

export const replayCommand: CommandSpec = {
  name: 'replay',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    temporal: { type: 'boolean' },
    project: { type: 'string' },
    'skip-code-check': { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    const file = await resolveStoredTape(positionals[0], flags.dir as string | undefined, USAGE);
    // A .jbxb bug report carries its own workflow code and history: no project or server needed.
    if (isBundleFile(file)) return replayBundle(file, flags.temporal === true, out);
    const timeline = readTimelineOrExit(file);
    try {
      const config = loadProjectConfig(flags.project as string | undefined);
      if (flags.temporal) {
        // The replayer logs through the worker runtime; stdout is reserved for the result (--json).
        installStderrRuntime();
        if (!hasStoredHistory(file)) {
          out.info(`no history stored beside ${file}; fetching it from the Temporal server`);
          await fetchHistoryInto(file, timeline);
        }
        const report = await replayTemporalHistory(file, { workflowsPath: config.workflows });
        out.result(
          report.deterministic
            ? `temporal replay of ${file}: deterministic (${report.eventCount} events, ${report.durationMs.toFixed(0)} ms)`
            : `temporal replay of ${file}: NOT deterministic against the current code\n  ${report.error}`,
          report,
        );
        if (!report.deterministic)
          throw new ExitError(
            ExitCode.failed,
            `the current workflow code is not deterministic against ${file}'s history`,
          );
        return;
      }
      const located = await locateAgent(timeline.tape.header.workflowType, config);
      let code: CodeCheck | null = null;
      if (!flags['skip-code-check']) {
        code = await checkAgentCode(
          config,
          timeline.tape.header,
          await bundleAgentWorkflows(config.workflows),
        );
        if (!code.matches) out.info(describeCodeCheck(code));
      }
      const report = await replayTape(file, { agent: located.agent, timeline });
      out.result(renderReplayReport(report, located.module, process.stdout.columns || 100), {
        ...report,
        agentModule: located.module,
        config: config.source,
        code,
      });
      if (report.status === 'diverged') {
        const d = report.divergence!;
        throw new ExitError(
          ExitCode.failed,
          `replay diverged at step ${d.step} (frame ${d.frame}, ${d.kind}): ${d.fields.join(', ')}` +
            (code && !code.matches
              ? ' (the agent code changed since the recording; see the warning above)'
              : ''),
        );
      }
    } catch (err) {
      failed(err);
    }
  },
};
