/**
 * `jbx experiment DIR --model M | --system-prompt-file F | --set KEY=VALUE ...`: forks every recorded run in DIR
 * (or those a `jbx ls` filter keeps) at its first model step with the change, runs them on Temporal with nothing
 * committed, and reports per run and in total (docs/experiments.md). A thin handler over runExperiment.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Provider } from '../../llm/types';
import { OUTCOME_FILTERS, SORT_KEYS } from '../../recorder/catalog';
import { tapeDirFromEnv } from '../../recorder/store';
import { PROVIDERS, runExperiment, withTemporal } from '../../temporal';
import {
  type ExperimentChange,
  type ExperimentReport,
  ExperimentRequestError,
  ExperimentStateError,
  renderExperimentHtml,
  renderExperimentJunit,
  renderExperimentTerminal,
} from '../../timetravel/experiment';
import type { ForkOverrides } from '../../timetravel/fork';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { parseSets } from '../fork';
import { queryFromFlags } from '../ls/query';
import { experimentProgress } from './progressBar';

const USAGE =
  'jbx experiment [DIR] (--model M | --provider P | --system-prompt-file F | --set PATH=VALUE | --set gate.NAME.KEY=VALUE)... ' +
  `[--outcome ${OUTCOME_FILTERS.join('|')}[,...]] [--since DATE|AGE] [--workflow NAME] [--sort ${SORT_KEYS.join('|')}] [--limit N] ` +
  '[--concurrency N] [--state FILE] [--junit FILE] [--html FILE] [--task-queue Q] [--json]';

const GATE_SET = /^gate\.([A-Za-z0-9_][\w.-]*?)\.([A-Za-z_]\w*)=/;

/** `--set gate.NAME.KEY=VALUE` are gate parameters; every other `--set` sets a request field, as in `jbx fork`. */
function parseChange(flags: Record<string, unknown>): ExperimentChange {
  const overrides: ForkOverrides = {};
  if (typeof flags.provider === 'string') {
    if (!PROVIDERS.includes(flags.provider as Provider))
      throw usageError(
        `unknown provider ${JSON.stringify(flags.provider)}; use one of ${PROVIDERS.join(', ')}`,
      );
    overrides.provider = flags.provider as Provider;
  }
  if (typeof flags.model === 'string') overrides.model = flags.model;
  const promptFile = flags['system-prompt-file'];
  if (typeof promptFile === 'string') {
    if (!existsSync(promptFile) || !statSync(promptFile).isFile())
      throw usageError(`--system-prompt-file ${promptFile}: no such file`);
    overrides.system = readFileSync(promptFile, 'utf8');
  }
  const raw = flags.set === undefined ? [] : Array.isArray(flags.set) ? flags.set : [flags.set];
  const gateParams: Record<string, Record<string, unknown>> = {};
  const requestSets: string[] = [];
  for (const item of raw as string[]) {
    if (!item.startsWith('gate.')) {
      requestSets.push(item);
      continue;
    }
    const m = GATE_SET.exec(item);
    if (!m)
      throw usageError(
        `--set ${JSON.stringify(item)}: a gate parameter is gate.NAME.KEY=VALUE (e.g. gate.refund-threshold.limitCents=80000)`,
      );
    const text = item.slice(m[0].length);
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      // a plain string
    }
    gateParams[m[1]!] = { ...gateParams[m[1]!], [m[2]!]: value };
  }
  const set = parseSets(requestSets.length ? requestSets : undefined);
  if (set) overrides.set = set;
  return { overrides, ...(Object.keys(gateParams).length ? { gateParams } : {}) };
}

function writeAtomically(file: string, text: string): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/** The viewer's page of a run, relative to the experiment page it serves at /experiments/ID. */
const viewerLink = (dir: string) => (tapeFile: string) =>
  path.dirname(path.resolve(tapeFile)) === dir
    ? `/#/run/${encodeURIComponent(path.basename(tapeFile, '.jbx'))}`
    : undefined;

export const experimentCommand: CommandSpec = {
  name: 'experiment',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    model: { type: 'string' },
    provider: { type: 'string' },
    'system-prompt-file': { type: 'string' },
    set: { type: 'string', multiple: true },
    outcome: { type: 'string' },
    since: { type: 'string' },
    workflow: { type: 'string' },
    sort: { type: 'string' },
    limit: { type: 'string' },
    concurrency: { type: 'string' },
    state: { type: 'string' },
    junit: { type: 'string' },
    html: { type: 'string' },
    'task-queue': { type: 'string' },
  },
  async run({ positionals, flags, out }) {
    if (positionals.length > 1) throw usageError(`give one folder of runs\nusage: ${USAGE}`);
    const dir = path.resolve(
      positionals[0] ?? (typeof flags.dir === 'string' ? flags.dir : undefined) ?? tapeDirFromEnv(),
    );
    if (!existsSync(dir) || !statSync(dir).isDirectory())
      throw usageError(`${dir}: no such folder of recorded runs\nusage: ${USAGE}`);
    const change = parseChange(flags);
    const q = queryFromFlags(flags, USAGE);
    let concurrency = 4;
    if (flags.concurrency !== undefined) {
      const text = String(flags.concurrency);
      concurrency = Number(text);
      if (!/^\d+$/.test(text) || concurrency < 1 || concurrency > 256)
        throw usageError(`--concurrency needs an integer from 1 to 256, got ${JSON.stringify(text)}`);
    }
    const bar = experimentProgress();
    let report: ExperimentReport;
    try {
      report = await withTemporal(({ connection, config }) =>
        runExperiment({
          dir,
          query: q,
          change,
          connection,
          namespace: config.namespace,
          concurrency,
          ...(typeof flags.state === 'string' ? { stateFile: flags.state } : {}),
          ...(typeof flags['task-queue'] === 'string' ? { taskQueue: flags['task-queue'] } : {}),
          onProgress: (p) => bar.update(p),
        }),
      );
    } catch (err) {
      bar.done();
      if (err instanceof ExperimentRequestError || err instanceof ExperimentStateError)
        throw new ExitError(ExitCode.usage, `${err.message}\nusage: ${USAGE}`, err);
      throw err;
    }
    bar.done();
    // The page the viewer serves at /experiments/ID, beside the state file's default place.
    const page = renderExperimentHtml(report, viewerLink(dir));
    writeAtomically(path.join(dir, '.experiments', `${report.id}.html`), page);
    if (typeof flags.html === 'string') writeAtomically(flags.html, page);
    if (typeof flags.junit === 'string') writeAtomically(flags.junit, renderExperimentJunit(report));
    out.result(renderExperimentTerminal(report), report);
    if (!report.ok)
      throw new ExitError(
        ExitCode.failed,
        `${report.totals.failed} of ${report.totals.runs} runs could not be run (see their error); run the same command again to retry only those`,
      );
  },
};
