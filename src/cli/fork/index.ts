/**
 * `jbx fork TAPE --at STEP`: starts a fork of a recorded run on Temporal (steps before STEP from the tape, the
 * rest live with the overrides) and, unless --no-wait, waits for it and stores its history beside its tape.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Provider } from '../../llm/types';
import { tapeDirFromEnv } from '../../recorder/store';
import { TapeError } from '../../recorder/tape';
import {
  checkAgentCode,
  describeCodeCheck,
  forkRun,
  loadRunHistory,
  PROVIDERS,
  startFork,
  validateFork,
  withTemporal,
} from '../../temporal';
import { temporalConfigFromEnv } from '../../temporal/config';
import { bundleAgentWorkflows } from '../../temporal/worker/workflowBundle';
import {
  type ForkOverrides,
  type ForkPoint,
  ForkRequestError,
  HistoryMismatchError,
  stepAtEvent,
} from '../../timetravel/fork';
import { loadProjectConfig, locateAgent } from '../../timetravel/replay';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { failed, readTimelineOrExit } from '../replay';
import { headerFailure, resolveTapePath } from '../verify/tapeArgument';

const USAGE =
  'jbx fork (TAPE (--at STEP | --at-frame N | --event N [--run-id R]) | --workflow-id W [--run-id R] --event N) [--model M] [--provider P] [--system-prompt FILE|TEXT] [--set PATH=VALUE]... ' +
  '[--task-queue Q] [--no-wait] [--project DIR] [--skip-code-check] [--dir D] [--json]';

function integer(flag: unknown, name: string): number | undefined {
  if (flag === undefined) return undefined;
  const n = Number(flag);
  if (typeof flag !== 'string' || !/^\d+$/.test(flag) || !Number.isSafeInteger(n))
    throw usageError(`--${name} needs a non-negative integer, got ${JSON.stringify(flag)}\nusage: ${USAGE}`);
  return n;
}

/** `--set PATH=VALUE`: VALUE is JSON when it parses as JSON (numbers, booleans, objects), else a string. */
export function parseSets(raw: unknown): Record<string, unknown> | undefined {
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  if (!list.length) return undefined;
  const out: Record<string, unknown> = {};
  for (const item of list as string[]) {
    const eq = item.indexOf('=');
    if (eq <= 0)
      throw usageError(`--set needs PATH=VALUE (e.g. --set temperature=0.2), got ${JSON.stringify(item)}`);
    const key = item.slice(0, eq);
    if (!/^[A-Za-z_][\w]*(\.[\w]+)*$/.test(key))
      throw usageError(
        `--set path ${JSON.stringify(key)} must be dotted field names, e.g. temperature or messages.0.content`,
      );
    if (/^(provider|model|system)$/.test(key))
      throw usageError(
        `--set ${key}=... : use --${key === 'system' ? 'system-prompt' : key} instead, which is validated`,
      );
    const text = item.slice(eq + 1);
    try {
      out[key] = JSON.parse(text);
    } catch {
      out[key] = text;
    }
  }
  return out;
}

function systemPrompt(arg: unknown): string | undefined {
  if (typeof arg !== 'string') return undefined;
  if (existsSync(arg) && statSync(arg).isFile()) return readFileSync(arg, 'utf8');
  return arg;
}

export const forkCommand: CommandSpec = {
  name: 'fork',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    at: { type: 'string' },
    'at-frame': { type: 'string' },
    model: { type: 'string' },
    provider: { type: 'string' },
    'system-prompt': { type: 'string' },
    set: { type: 'string', multiple: true },
    'task-queue': { type: 'string' },
    'no-wait': { type: 'boolean' },
    project: { type: 'string' },
    'skip-code-check': { type: 'boolean' },
    'workflow-id': { type: 'string' },
    'run-id': { type: 'string' },
    event: { type: 'string' },
  },
  async run({ positionals, flags, out }) {
    const eventId = integer(flags.event, 'event');
    const point = await historyPoint(positionals, flags, eventId, out);
    const file = point?.tapeFile ?? resolveTapePath(positionals[0], flags.dir as string | undefined, USAGE);
    const atStep = point?.step ?? integer(flags.at, 'at');
    const atFrame = integer(flags['at-frame'], 'at-frame');
    if (atStep === undefined && atFrame === undefined)
      throw usageError(`say where to fork: --at STEP, --at-frame N or --event N\nusage: ${USAGE}`);
    const overrides: ForkOverrides = {};
    if (typeof flags.provider === 'string') {
      if (!PROVIDERS.includes(flags.provider as Provider))
        throw usageError(
          `unknown provider ${JSON.stringify(flags.provider)}; use one of ${PROVIDERS.join(', ')}`,
        );
      overrides.provider = flags.provider as Provider;
    }
    if (typeof flags.model === 'string') overrides.model = flags.model;
    const system = systemPrompt(flags['system-prompt']);
    if (system !== undefined) overrides.system = system;
    const set = parseSets(flags.set);
    if (set) overrides.set = set;
    const parent = readTimelineOrExit(file);
    try {
      const config = loadProjectConfig(flags.project as string | undefined);
      const request = {
        parentTape: file,
        ...(atStep !== undefined ? { atStep } : {}),
        ...(atFrame !== undefined ? { atFrame } : {}),
        overrides,
        knownModels: config.models,
      };
      validateFork(request, parent);
      await locateAgent(parent.tape.header.workflowType, config);
      if (!flags['skip-code-check']) {
        const code = await checkAgentCode(
          config,
          parent.tape.header,
          await bundleAgentWorkflows(config.workflows),
        );
        if (!code.matches)
          out.info(
            `${describeCodeCheck(code)}\nthe fork goes ahead: a step before the fork point whose request changed fails the fork with FORK_INHERITED_STEP_DIVERGED`,
          );
      }
      await withTemporal(async ({ connection, config: temporal }) => {
        const options = {
          ...request,
          connection,
          namespace: temporal.namespace,
          ...(typeof flags['task-queue'] === 'string' ? { taskQueue: flags['task-queue'] } : {}),
        };
        if (flags['no-wait']) {
          const s = await startFork(options);
          out.result(`started fork ${s.workflowId} (run ${s.runId}) of ${file} at step ${s.fork.forkStep}`, {
            workflowId: s.workflowId,
            runId: s.runId,
            fork: s.fork,
            ...(point ? { event: point.json } : {}),
          });
          return;
        }
        out.info(
          `forking ${file} at step ${atStep ?? `frame ${atFrame}`}; waiting for the fork to finish (a worker must poll its task queue)`,
        );
        const f = await forkRun({ ...options, tapeDir: tapeDirFromEnv() });
        const inherited = f.fork.forkStep;
        const human = [
          `fork ${f.workflowId} (run ${f.runId}) of ${file}`,
          `  parent ${f.fork.parentTapeId} at step ${inherited}, prefix ${f.fork.parentTapeHash.slice(0, 16)}…`,
          `  steps 0..${inherited - 1} from the tape, ${f.result ? f.result.steps.length - inherited : '?'} live; overrides ${JSON.stringify(overrides)}`,
          `  tape ${f.tapeFile}`,
          f.error ? `  FAILED: ${f.error}` : `  completed: ${JSON.stringify(f.result?.output).slice(0, 200)}`,
        ].join('\n');
        out.result(human, {
          workflowId: f.workflowId,
          runId: f.runId,
          tape: f.tapeFile,
          fork: f.fork,
          ...(point ? { event: point.json } : {}),
          status: f.error ? 'failed' : 'completed',
          output: f.result?.output,
          error: f.error,
        });
        if (f.error) throw new ExitError(ExitCode.failed, `the fork ${f.workflowId} failed: ${f.error}`);
      });
    } catch (err) {
      if (err instanceof ForkRequestError) throw new ExitError(ExitCode.usage, err.message, err);
      failed(err);
    }
  },
};

/**
 * `--event N` (with `--workflow-id W [--run-id R]` or a TAPE): the run's tape and history, and the step event N
 * maps to. The history is the one stored beside the tape, else the server's (then stored).
 */
async function historyPoint(
  positionals: string[],
  flags: Record<string, string | boolean | undefined>,
  eventId: number | undefined,
  out: { info(m: string): void },
): Promise<{ tapeFile: string; step: number; json: ForkPoint } | undefined> {
  const workflowId = typeof flags['workflow-id'] === 'string' ? flags['workflow-id'] : undefined;
  const runId = typeof flags['run-id'] === 'string' ? flags['run-id'] : undefined;
  if (eventId === undefined) {
    if (workflowId || runId)
      throw usageError(
        `--workflow-id / --run-id name a run to fork at a history event: add --event N\nusage: ${USAGE}`,
      );
    return undefined;
  }
  if (flags.at !== undefined || flags['at-frame'] !== undefined)
    throw usageError(`--event excludes --at and --at-frame: give one fork point\nusage: ${USAGE}`);
  if (!workflowId && !positionals[0])
    throw usageError(`--event N needs the run: --workflow-id W [--run-id R], or a TAPE\nusage: ${USAGE}`);
  if (workflowId && positionals[0])
    throw usageError(`give the run either as TAPE or as --workflow-id, not both\nusage: ${USAGE}`);
  const tapeFile = positionals[0]
    ? resolveTapePath(positionals[0], flags.dir as string | undefined, USAGE)
    : undefined;
  const tapeDir = typeof flags.dir === 'string' ? path.resolve(flags.dir) : tapeDirFromEnv();
  const temporal = temporalConfigFromEnv();
  try {
    const run = await withTemporal(
      ({ client }) =>
        loadRunHistory({
          ...(tapeFile ? { tapeFile } : {}),
          ...(workflowId ? { workflowId } : {}),
          ...(runId ? { runId } : {}),
          tapeDir,
          client,
          serverName: `${temporal.address} namespace ${temporal.namespace}`,
        }),
      temporal,
    );
    // A run that continued as new: event ids start again in each execution, and --run-id says whose it is.
    const point = stepAtEvent(
      run.alignment,
      eventId,
      run.tapeFile,
      run.segments.length > 1 ? runId : undefined,
    );
    out.info(`${run.workflowId} run ${run.runId}, history from ${run.historySource}: ${point.note}`);
    return { tapeFile: run.tapeFile, step: point.step, json: point };
  } catch (err) {
    if (err instanceof ForkRequestError) throw new ExitError(ExitCode.usage, err.message, err);
    if (err instanceof HistoryMismatchError) throw new ExitError(ExitCode.failed, err.message, err);
    if (err instanceof TapeError) throw headerFailure(tapeFile ?? String(workflowId), err);
    failed(err);
  }
}
