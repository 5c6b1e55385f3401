/**
 * `jbx bundle TAPE -o report.jbxb`: one file holding a run's tape, its Temporal history and the workflow code
 * that recorded it, so someone else can `jbx replay` it (offline or with `--temporal`) with neither the
 * agent's source nor a server.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { hashBundleCode } from '../../recorder/agentCodeHash';
import { contentStoreOfTapeDir } from '../../recorder/content';
import { tapeDirFromEnv } from '../../recorder/store';
import { openTape, TapeError } from '../../recorder/tape';
import { fetchHistoryBesideTape, hasStoredHistory, loadStoredHistory } from '../../temporal';
import { storedHistoryFiles } from '../../temporal/client/storedHistory';
import { temporalConfigFromEnv } from '../../temporal/config';
import { contentOfHistories } from '../../temporal/content/historyContent';
import { bundleAgentWorkflows } from '../../temporal/worker/workflowBundle';
import {
  agentsOfWorkflowCode,
  codeDirFor,
  findWorkflowCode,
  WorkflowCodeMissingError,
  writeBundle,
} from '../../timetravel/bundle';
import { HistoryMismatchError } from '../../timetravel/fork/errors';
import { loadProjectConfig } from '../../timetravel/replay';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { headerFailure, resolveTapePath } from '../verify/tapeArgument';

/**
 * Whether the tape's workflow is a plain Temporal workflow (the bundled code defines no Jukebox agent of its
 * name): it then replays from its history only, with Temporal's replayer, not step by step against the tape.
 */
function isPlainWorkflow(code: string, workflowType: string): boolean {
  try {
    return !agentsOfWorkflowCode(code, workflowType).has(workflowType);
  } catch {
    return false; // not loadable here: `jbx replay` will say why
  }
}

/** The last line of `jbx bundle`: a replay command that works for what the bundle holds. */
function replayHint(file: string, workflowType: string, plain: boolean, history: boolean): string {
  const name = path.basename(file);
  if (!plain)
    return `replay it anywhere: jbx replay ${name}${history ? ` / jbx replay --temporal ${name}` : ''}`;
  if (history)
    return `replay it anywhere: jbx replay ${name} (${workflowType} is a plain Temporal workflow: Temporal's replayer runs its history with the bundled code)`;
  return `${workflowType} is a plain Temporal workflow: it replays from its history, which --no-history left out; bundle it again without --no-history to replay it elsewhere`;
}

const USAGE = 'jbx bundle TAPE [-o FILE] [--code-dir D] [--project DIR] [--no-history] [--dir D] [--json]';

async function workflowCode(
  tapeFile: string,
  agentCodeHash: string,
  flags: Record<string, string | boolean | undefined>,
  info: (m: string) => void,
): Promise<string> {
  const dirs = [
    ...(typeof flags['code-dir'] === 'string' ? [path.resolve(flags['code-dir'])] : []),
    codeDirFor(path.dirname(tapeFile)),
    codeDirFor(tapeDirFromEnv()),
  ];
  const stored = findWorkflowCode(dirs, agentCodeHash);
  if (stored) return stored.code;
  // Not kept by a worker (an older tape, or recorded elsewhere): today's code may still be that code.
  const config = loadProjectConfig(flags.project as string | undefined);
  info(`the recorded workflow code is not in ${dirs.join(', ')}; bundling ${config.workflows} to compare`);
  const current = (await bundleAgentWorkflows(config.workflows)).code;
  const hash = hashBundleCode(current);
  if (hash === agentCodeHash) return current;
  throw new WorkflowCodeMissingError(tapeFile, agentCodeHash, dirs, hash);
}

async function history(
  tapeFile: string,
  run: { workflowId: string; runId: string },
  info: (m: string) => void,
): Promise<{ segments: { runId: string; bytes: Uint8Array }[]; content: Map<string, Uint8Array> }> {
  if (!hasStoredHistory(tapeFile)) {
    const temporal = temporalConfigFromEnv();
    info(`no history stored beside ${tapeFile}; fetching it from ${temporal.address}`);
    try {
      await fetchHistoryBesideTape(tapeFile, run, temporal);
    } catch (err) {
      throw new ExitError(
        ExitCode.failed,
        `no workflow history is stored beside ${tapeFile}, and fetching it from ${temporal.address} failed (${(err as Error).message}). ` +
          'Run `jbx bundle` while the server that ran it is up, or pass --no-history (the bundle then replays offline but not with --temporal)',
        err,
      );
    }
  }
  const { sidecar, segments } = loadStoredHistory(tapeFile);
  if (sidecar.workflowId !== run.workflowId || sidecar.runId !== run.runId)
    throw new HistoryMismatchError(
      tapeFile,
      sidecar.history,
      `it was stored for workflow ${sidecar.workflowId} run ${sidecar.runId}`,
    );
  // The stored files' own bytes (loadStoredHistory checked their hashes), not a re-encoding: one per execution
  // of a run that continued as new.
  // The blobs the histories' claims name (payloads past the threshold, what a later execution carries over),
  // from the tape folder's content store: the bundle then replays with no store at all.
  const store = contentStoreOfTapeDir(path.dirname(tapeFile));
  try {
    const content = await contentOfHistories(
      segments.map((s) => s.history),
      store,
    );
    if (content.missing.length)
      info(
        `warning: the content store ${store.location} lacks ${content.missing.length} blob(s) the history refers to (first ${content.missing[0]}); ` +
          'the bundle replays offline, but `jbx replay --temporal` of it will fail. Point JUKEBOX_CONTENT_DIR (or the tape store) at the store the run used and bundle again',
      );
    return {
      segments: storedHistoryFiles(tapeFile).map((f) => ({ runId: f.runId, bytes: readFileSync(f.file) })),
      content: content.blobs,
    };
  } finally {
    await store.close();
  }
}

export const bundleCommand: CommandSpec = {
  name: 'bundle',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    output: { type: 'string', short: 'o' },
    'code-dir': { type: 'string' },
    project: { type: 'string' },
    'no-history': { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    if (positionals.length > 1) throw usageError(`jbx bundle takes one TAPE\nusage: ${USAGE}`);
    const file = resolveTapePath(positionals[0], flags.dir as string | undefined, USAGE);
    const output = path.resolve(
      typeof flags.output === 'string' ? flags.output : `${path.basename(file, '.jbx')}.jbxb`,
    );
    if (existsSync(output) && path.resolve(output) === path.resolve(file))
      throw usageError(`-o ${output} is the tape itself; name another file`);
    let header: ReturnType<typeof openTape>['header'];
    try {
      const cursor = openTape(file, { keepBlobs: false });
      header = cursor.header;
      cursor.close();
    } catch (err) {
      if (err instanceof TapeError) throw headerFailure(file, err);
      throw err;
    }
    const info = (m: string) => out.info(m);
    try {
      const code = await workflowCode(file, header.agentCodeHash, flags, info);
      const h = flags['no-history'] ? undefined : await history(file, header, info);
      const written = await writeBundle(
        {
          tapeFile: file,
          workflowCode: code,
          ...(h ? { history: { segments: h.segments }, content: h.content } : {}),
          createdBy: 'jbx bundle',
        },
        output,
      );
      const m = written.manifest;
      out.result(
        [
          `${written.file}: ${written.bytes} bytes, BLAKE3 ${written.hash}`,
          `  tape     ${m.tape.part} (${m.tape.frames} frames, ${m.tape.sealed ? `sealed, ${m.tape.outcome}` : 'not sealed'})`,
          `  history  ${m.history ? `${m.history.eventCount + (m.segments ?? []).reduce((n, x) => n + x.eventCount, 0)} events${m.segments?.length ? ` in ${m.segments.length + 1} executions` : ''}` : 'none (--no-history)'}`,
          `  code     ${m.workflowCode.hash}`,
          ...(m.content
            ? [
                `  content  ${m.content.blobs} blobs, ${m.content.bytes} bytes (the payloads the history refers to)`,
              ]
            : []),
          replayHint(
            written.file,
            header.workflowType,
            isPlainWorkflow(code, header.workflowType),
            !!m.history,
          ),
        ].join('\n'),
        written,
      );
    } catch (err) {
      if (err instanceof TapeError)
        throw new ExitError(ExitCode.tapeDamaged, `${file} is damaged: ${err.message}`, err);
      if (err instanceof WorkflowCodeMissingError || err instanceof HistoryMismatchError)
        throw new ExitError(ExitCode.failed, err.message, err);
      throw err;
    }
  },
};
