/**
 * `jbx replay TAPE`: re-executes the agent's code offline with every step answered from the tape and audits
 * each request; `--temporal` runs Temporal's replayer on the workflow history stored beside the tape.
 */
import { TapeError } from '../../recorder/tape';
import { temporalConfigFromEnv } from '../../temporal/config';
import type { CodeCheck } from '../../temporal/worker/codeCheck';
import { findWorkflowCode } from '../../timetravel/bundle/codeStore';
import { isBundleFile } from '../../timetravel/bundle/format';
import { findAgentCode, storedCodeDirs } from '../../timetravel/replay/agentCode';
import {
  AgentCodeNotFoundError,
  HistoryMissingError,
  ProjectConfigError,
  ReplayCodeMissingError,
  TapeNotReplayableError,
} from '../../timetravel/replay/errors';
import { loadProjectConfig } from '../../timetravel/replay/projectConfig';
import { replayWithCode } from '../../timetravel/replay/replayWithCode';
import { readTimeline, type Timeline } from '../../timetravel/replay/timeline';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError } from '../exitError';
import { headerFailure, resolveStoredTape } from '../verify/tapeArgument';
import { eventsOf, renderReplayReport } from './render';
import { isSuiteArgument } from './suiteArgument';

// The offline replay of one tape needs neither Temporal's worker nor its client: they load (seconds of
// modules) only for --temporal, a project's code check, a missing history, a bundle or a suite of tapes.
const temporal = () => require('../../temporal') as typeof import('../../temporal');

const USAGE =
  'jbx replay TAPE|BUNDLE.jbxb|DIR|GLOB [--against DIR] [--junit FILE] [--jobs N] [--temporal] [--skip-code-check] [--dir D] [--json]';

export function readTimelineOrExit(file: string): Timeline {
  // A .jbxb bug report reads as the tape it carries.
  // Required here: a bundle's reader decodes Temporal histories (@temporalio/proto, protobufjs: ~55 modules),
  // which replaying a .jbx tape never needs.
  if (isBundleFile(file))
    return (require('../verify/bundle') as typeof import('../verify/bundle')).openBundleOrExit(file).timeline;
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
    err instanceof ReplayCodeMissingError ||
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
    await temporal().fetchHistoryBesideTape(file, { workflowId: h.workflowId, runId: h.runId }, config);
  } catch (err) {
    throw new HistoryMissingError(
      file,
      `and fetching workflow ${h.workflowId} run ${h.runId} from namespace ${config.namespace} at ${config.address} failed: ${(err as Error).message} (set JUKEBOX_TEMPORAL_NAMESPACE / JUKEBOX_TEMPORAL_ADDRESS to the server that ran it)`,
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
    against: { type: 'string' },
    project: { type: 'string' },
    junit: { type: 'string' },
    jobs: { type: 'string' },
    'skip-code-check': { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    // `--project` is the older name of `--against`: both replay that project's current code.
    const against = (flags.against ?? flags.project) as string | undefined;
    if (isSuiteArgument(positionals, flags))
      return (require('./suite') as typeof import('./suite')).replaySuite(
        positionals,
        flags,
        against,
        out,
        USAGE,
      );
    const file = await resolveStoredTape(positionals[0], flags.dir as string | undefined, USAGE);
    // A .jbxb bug report carries its own workflow code and history: no project or server needed.
    if (isBundleFile(file))
      return (require('./bundle') as typeof import('./bundle')).replayBundle(
        file,
        flags.temporal === true,
        out,
      );
    const timeline = readTimelineOrExit(file);
    const h = timeline.tape.header;
    try {
      if (flags.temporal) {
        // The replayer logs through the worker runtime; stdout is reserved for the result (--json).
        const { hasStoredHistory, installStderrRuntime, replayTemporalHistory } = temporal();
        installStderrRuntime();
        if (!hasStoredHistory(file)) {
          out.info(`no history stored beside ${file}; fetching it from the Temporal server`);
          await fetchHistoryInto(file, timeline);
        }
        // Like the offline replay: the run's own stored code unless a project is named.
        const stored =
          against === undefined ? findWorkflowCode(storedCodeDirs(file), h.agentCodeHash) : undefined;
        const report = await replayTemporalHistory(
          file,
          stored
            ? { bundle: { code: stored.code } }
            : { workflowsPath: loadProjectConfig(against).workflows },
        );
        out.result(
          report.deterministic
            ? `temporal replay of ${file}: deterministic (${eventsOf(report)}, ${report.durationMs.toFixed(0)} ms, ${stored ? `the run's own code ${stored.file}` : 'the current code'})`
            : `temporal replay of ${file}: NOT deterministic against ${stored ? `its stored code ${stored.file}` : 'the current code'}\n  ${report.error}`,
          { ...report, codeSource: stored ? 'stored' : 'project' },
        );
        if (!report.deterministic)
          throw new ExitError(
            ExitCode.failed,
            `the ${stored ? 'stored' : 'current'} workflow code is not deterministic against ${file}'s history`,
          );
        return;
      }
      const found = await findAgentCode(file, h, against !== undefined ? { project: against } : {});
      let code: (CodeCheck & { source?: string }) | null = null;
      if (found.source === 'stored')
        code = {
          recorded: h.agentCodeHash,
          current: h.agentCodeHash,
          matches: true,
          changedFiles: [],
          source: 'stored',
        };
      else if (!flags['skip-code-check']) {
        const config = found.config!;
        const { bundleAgentWorkflows, checkAgentCode, describeCodeCheck } = temporal();
        code = await checkAgentCode(config, h, await bundleAgentWorkflows(config.workflows));
        if (!code.matches) out.info(describeCodeCheck(code));
      }
      if (found.source === 'stored' && !out.json)
        out.info(
          `replaying the run's own code, stored by its hash beside the tape; --against DIR replays a project's current code`,
        );
      const report = await replayWithCode(file, timeline, found);
      out.result(renderReplayReport(report, found.module, process.stdout.columns || 100), {
        ...report,
        agentModule: found.module,
        codeSource: found.source,
        config: found.config?.source ?? null,
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
