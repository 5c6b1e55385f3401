/**
 * A what-if experiment on Temporal (docs/experiments.md): every recorded run of a folder (or a catalog query)
 * forked at its first model step with one change, run with each commit's gates judged and nothing applied
 * (AgentRunOptions.experiment), then compared with its recording: did it diverge, where first, how did it end,
 * what did it cost. At most `concurrency` forks run at once; each finished run is recorded in the state file
 * before the next starts, and a fork's workflow id is derived from the experiment, so an interrupted experiment
 * resumes by skipping the runs it finished and waiting for the forks it had started.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Connection, WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { AgentRunResult } from '../../agent/context';
import { TapeCatalog, type TapeQuery } from '../../recorder/catalog';
import { tapeFileName } from '../../recorder/naming';
import { tapeDirFromEnv } from '../../recorder/store';
import {
  type ExperimentChange,
  type ExperimentReport,
  ExperimentRequestError,
  type ExperimentRunResult,
  ExperimentState,
  experimentTotals,
  firstDivergence,
  type RunSide,
  runSideOf,
} from '../../timetravel/experiment';
import { readTimeline, type Timeline } from '../../timetravel/replay/timeline';
import type { AgentRunOptions } from '../workflow/runOptions';
import { startFork, validateFork } from './forkRun';
import { jukeboxClient } from './jukeboxClient';

export interface RunExperimentOptions {
  /** The folder of recordings. */
  dir: string;
  /** Which of them (the `jbx ls` filters); default every run in the folder. */
  query?: TapeQuery;
  change: ExperimentChange;
  connection: Connection;
  namespace: string;
  /** Default: each recording's own task queue (its tape header's). */
  taskQueue?: string;
  /** Where the workers write tapes, so the forks' tapes can be read (default: the environment's tape folder). */
  tapeDir?: string;
  /** Default `<dir>/.experiments/<id>.jsonl`. */
  stateFile?: string;
  /** Forks running at once; default 4. */
  concurrency?: number;
  /** Extra model names to accept (the project configuration's `models`). */
  knownModels?: readonly string[];
  /** After every finished run (a resumed one included). */
  onProgress?: (p: ExperimentProgress) => void;
}

export interface ExperimentProgress {
  id: string;
  total: number;
  finished: number;
  resumed: number;
  running: number;
  last?: ExperimentRunResult;
}

/** The marker in an experiment fork's workflow id; such runs are never themselves part of an experiment. */
export const EXPERIMENT_ID_MARKER = '.experiment-';

const EMPTY_SIDE: RunSide = {
  outcome: 'unfinished',
  reason: 'the recording could not be read',
  steps: 0,
  inputTokens: 0,
  outputTokens: 0,
  tokens: 0,
  cost: null,
};

function hasChange(c: ExperimentChange): boolean {
  const o = c.overrides;
  return (
    o.provider !== undefined ||
    o.model !== undefined ||
    o.system !== undefined ||
    Object.keys(o.set ?? {}).length > 0 ||
    Object.values(c.gateParams ?? {}).some((p) => Object.keys(p).length > 0)
  );
}

type ForkHandle = WorkflowHandle<
  (input: unknown, options?: AgentRunOptions) => Promise<AgentRunResult<unknown>>
>;

/** Reads a fork's tape; the worker seals it as the run ends, a moment after the result may reach the client. */
async function readSealed(file: string): Promise<Timeline> {
  for (let attempt = 0; ; attempt++) {
    try {
      const t = readTimeline(file);
      if (t.outcome || attempt >= 50) return t;
    } catch (err) {
      if (attempt >= 50) throw err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function runExperiment(options: RunExperimentOptions): Promise<ExperimentReport> {
  if (!hasChange(options.change))
    throw new ExperimentRequestError(
      'an experiment needs a change: a model, a provider, a system prompt, a request field or a gate parameter',
    );
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new ExperimentRequestError(`concurrency must be a positive integer, got ${concurrency}`);
  const dir = path.resolve(options.dir);
  // The limit counts recordings, so it is applied once an earlier experiment's forks (rolled back, and the
  // newest runs of the folder) are left out: `--sort started --limit 3` takes the three newest recordings.
  const { limit, ...query } = options.query ?? {};
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1))
    throw new ExperimentRequestError(`query.limit must be a positive integer, got ${limit}`);
  const listing = await new TapeCatalog({ dir }).list(query);
  const rows = listing.rows
    .filter((r) => !(r.workflowId ?? '').includes(EXPERIMENT_ID_MARKER))
    .slice(0, limit ?? Number.POSITIVE_INFINITY);
  if (!rows.length)
    throw new ExperimentRequestError(
      listing.total
        ? `none of the ${listing.total} runs in ${dir} match the filter`
        : `no recorded runs in ${dir}`,
    );
  const files = rows.map((r) => path.resolve(r.file));
  const id = createHash('sha256')
    .update(JSON.stringify({ change: options.change, tapes: rows.map((r) => r.tapeId) }))
    .digest('hex')
    .slice(0, 12);
  const stateFile = path.resolve(options.stateFile ?? path.join(dir, '.experiments', `${id}.jsonl`));
  const state = ExperimentState.open(stateFile, {
    kind: 'jukebox.experiment',
    version: 1,
    id,
    change: options.change,
    dir,
    tapes: files,
    startedAt: new Date().toISOString(),
  });
  const tapes = state.header.tapes;
  const resumed = tapes.filter((f) => state.finished.has(path.basename(f, '.jbx'))).length;
  const tapeDir = options.tapeDir ?? tapeDirFromEnv();
  const client = jukeboxClient(options.connection, options.namespace);
  const runOptions: AgentRunOptions = {
    experiment: {
      stageOnly: true,
      ...(options.change.gateParams ? { gateParams: options.change.gateParams } : {}),
    },
  };

  async function runOne(file: string): Promise<ExperimentRunResult> {
    const runId = path.basename(file, '.jbx');
    let parent: Timeline | undefined;
    let forkWorkflowId = '';
    try {
      parent = readTimeline(file);
      const h = parent.tape.header;
      forkWorkflowId = `${h.workflowId}${EXPERIMENT_ID_MARKER}${id}`;
      const first = parent.steps.find((s) => s.kind === 'llm');
      if (!first) throw new ExperimentRequestError(`${file} has no model step to fork at`);
      const request = {
        parentTape: file,
        atStep: first.step,
        overrides: options.change.overrides,
        ...(options.knownModels ? { knownModels: options.knownModels } : {}),
      };
      validateFork(request, parent);
      // A fork an interrupted experiment started is waited for, not started again.
      let handle: ForkHandle = client.workflow.getHandle(forkWorkflowId);
      try {
        await handle.describe();
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        handle = (
          await startFork({
            ...request,
            connection: options.connection,
            namespace: options.namespace,
            ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
            workflowId: forkWorkflowId,
            runOptions,
          })
        ).handle;
      }
      // A fork that fails (a step's error, a tripped breaker) is an outcome like any other: its tape says how.
      await handle.result().catch(() => undefined);
      const forkRunId = (await handle.describe()).runId;
      const forkTape = path.join(tapeDir, tapeFileName(forkWorkflowId, forkRunId));
      const fork = await readSealed(forkTape);
      const d = firstDivergence(parent, fork);
      return {
        id: runId,
        tape: file,
        workflowId: h.workflowId,
        status: 'done',
        forkWorkflowId,
        forkTape,
        forkStep: first.step,
        diverged: d !== null,
        firstDivergence: d,
        before: runSideOf(parent),
        after: runSideOf(fork),
      };
    } catch (err) {
      return {
        id: runId,
        tape: file,
        workflowId: parent?.tape.header.workflowId ?? '',
        status: 'failed',
        error: err instanceof Error ? err.message : String(err),
        forkWorkflowId,
        diverged: false,
        firstDivergence: null,
        before: parent ? runSideOf(parent) : EMPTY_SIDE,
        after: null,
      };
    }
  }

  const results: ExperimentRunResult[] = new Array(tapes.length);
  let next = 0;
  let finished = 0;
  let running = 0;
  const progress = (last?: ExperimentRunResult) =>
    options.onProgress?.({
      id,
      total: tapes.length,
      finished,
      resumed,
      running,
      ...(last ? { last } : {}),
    });
  for (const [i, f] of tapes.entries()) {
    const done = state.finished.get(path.basename(f, '.jbx'));
    if (done) {
      results[i] = done;
      finished++;
    }
  }
  progress();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, tapes.length) }, async () => {
      while (next < tapes.length) {
        const i = next++;
        if (results[i]) continue;
        running++;
        const r = await runOne(tapes[i]!);
        running--;
        state.record(r);
        results[i] = r;
        finished++;
        progress(r);
      }
    }),
  );
  const totals = experimentTotals(results);
  return {
    id,
    change: options.change,
    dir,
    stateFile,
    runs: results,
    totals,
    resumed,
    ok: totals.failed === 0,
  };
}
