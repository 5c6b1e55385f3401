/**
 * A folder of tapes as a regression suite: every tape replayed offline (each with the code that recorded it, or
 * with a project's current code: record in production, replay in CI), in parallel up to the cores on worker
 * threads, one result per tape and a summary. `jbx replay DIR|GLOB` prints it; tests call `replayTapes`.
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { JukeboxError } from '../../errors/JukeboxError';
import { TapeError } from '../../recorder/tape';
import { agentFromWorkflowCode } from '../bundle/bundledAgent';
import { isBundleFile } from '../bundle/format';
import { openBundle } from '../bundle/openBundle';
import { findAgentCode } from './agentCode';
import type { Divergence } from './errors';
import { replayTape } from './replayTape';
import { replayWithCode } from './replayWithCode';

export { replayWithCode };

import { listTapes } from './tapeFiles';
import { readTimeline } from './timeline';

export interface TapeReplayResult {
  file: string;
  workflowType: string | null;
  /** `error`: the tape could not be replayed at all (damaged, no code for its agent, ...): see `error`. */
  status: 'match' | 'diverged' | 'incomplete' | 'error';
  steps: number;
  replayed: number;
  divergence: Divergence | null;
  recordedOutcome: string | null;
  /** Which code ran: the run's own stored code, a bundle's, or a project's current modules. */
  code: { source: 'stored' | 'bundle' | 'project'; module: string } | null;
  gatesChecked: number;
  /** Commits whose change set the project's tools staged again and matched. */
  stagingChecked: number;
  error?: { code: string; message: string };
  /**
   * Set for a plain Temporal workflow's bundle (its code holds no Jukebox agent): Temporal's replayer ran the
   * bundled code against the bundled history instead of a tape replay. `status` is `match` when deterministic,
   * `diverged` (with `divergence` null and the replayer's complaint in `error`) when not.
   */
  history?: { events: number; deterministic: boolean; error?: string };
  durationMs: number;
}

export interface SuiteSummary {
  tapes: number;
  match: number;
  diverged: number;
  incomplete: number;
  errors: number;
  /** Worker threads used (0: replayed in this thread). */
  workers: number;
  durationMs: number;
}

export interface SuiteReport {
  /** In the order of the tape list (sorted paths), whatever order they finished in. */
  results: TapeReplayResult[];
  summary: SuiteSummary;
  /** True when no tape diverged or failed to replay. */
  ok: boolean;
}

export interface ReplayTapesOptions {
  /** A project folder: replay its current code (its jukebox.config.json) instead of each run's recorded code. */
  against?: string;
  /** Worker threads; default: the machine's cores, at most one per tape. 1 replays in this thread. */
  jobs?: number;
  /** Called as each tape finishes (in finishing order). */
  onResult?: (r: TapeReplayResult) => void;
  /**
   * Replays a plain Temporal workflow's bundle, in this thread, when its code exports no agent of its workflow
   * type (without this, such a bundle is an AGENT_CODE_NOT_FOUND error). `jbx replay` passes Temporal's replayer
   * of the bundled history (src/cli/replay/plainWorkflowBundle.ts): the Temporal room sits above this one.
   */
  plainWorkflowBundle?: (file: string) => Promise<TapeReplayResult>;
}

/** What the workers need to know; plain data, it crosses threads. */
export interface ReplayOneOptions {
  against?: string;
}

/**
 * Runs `work` on a fresh result for `file` and times it; never throws: anything `work` throws becomes the
 * result's `error`, keeping the workflow type and code it had found.
 */
export async function timedReplay(
  file: string,
  work: (result: TapeReplayResult) => Promise<void>,
): Promise<TapeReplayResult> {
  const t0 = performance.now();
  const result = notReplayed(file);
  try {
    await work(result);
  } catch (err) {
    return {
      ...failedReplay(file, err),
      workflowType: result.workflowType,
      code: result.code,
      durationMs: performance.now() - t0,
    };
  }
  result.durationMs = performance.now() - t0;
  return result;
}

/** Replays one tape or bundle; never throws: anything that stops it is the result's `error`. */
export function replayOne(file: string, options: ReplayOneOptions = {}): Promise<TapeReplayResult> {
  return timedReplay(file, async (result) => {
    let report: Awaited<ReturnType<typeof replayTape>>;
    if (isBundleFile(file) && options.against === undefined) {
      const b = openBundle(file);
      result.workflowType = b.tape.header.workflowType;
      const module = `${file}#workflow-bundle.js`;
      const agent = agentFromWorkflowCode(b.workflowCode, b.tape.header.workflowType, module);
      result.code = { source: 'bundle', module };
      report = await replayTape(b.tape, { agent, timeline: b.timeline });
    } else {
      const timeline = isBundleFile(file) ? openBundle(file).timeline : readTimeline(file);
      const header = timeline.tape.header;
      result.workflowType = header.workflowType;
      const code = await findAgentCode(
        file,
        header,
        options.against !== undefined ? { project: options.against } : {},
      );
      result.code = { source: code.source, module: code.module };
      report = await replayWithCode(file, timeline, code);
    }
    Object.assign(result, {
      status: report.status,
      steps: report.steps,
      replayed: report.replayed,
      divergence: report.divergence,
      recordedOutcome: report.recordedOutcome,
      gatesChecked: report.gatesChecked,
      stagingChecked: report.stagingChecked,
    });
  });
}

function summarize(results: TapeReplayResult[], workers: number, durationMs: number): SuiteReport {
  const count = (s: TapeReplayResult['status']) => results.filter((r) => r.status === s).length;
  const summary: SuiteSummary = {
    tapes: results.length,
    match: count('match'),
    diverged: count('diverged'),
    incomplete: count('incomplete'),
    errors: count('error'),
    workers,
    durationMs,
  };
  return { results, summary, ok: summary.diverged === 0 && summary.errors === 0 };
}

/** A result before (or instead of) a replay. */
export function notReplayed(file: string): TapeReplayResult {
  return {
    file,
    workflowType: null,
    status: 'error',
    steps: 0,
    replayed: 0,
    divergence: null,
    recordedOutcome: null,
    code: null,
    gatesChecked: 0,
    stagingChecked: 0,
    durationMs: 0,
  };
}

export function failedReplay(file: string, err: unknown): TapeReplayResult {
  return {
    ...notReplayed(file),
    error: {
      code:
        err instanceof JukeboxError ? err.code : err instanceof TapeError ? 'TAPE_DAMAGED' : 'REPLAY_FAILED',
      message: err instanceof Error ? err.message : String(err),
    },
  };
}

function onWorker(worker: Worker, file: string, options: ReplayOneOptions): Promise<TapeReplayResult> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      worker.off('message', ok);
      worker.off('error', bad);
      worker.off('exit', exit);
    };
    const ok = (r: TapeReplayResult) => {
      settle();
      resolve(r);
    };
    const bad = (err: Error) => {
      settle();
      reject(err);
    };
    const exit = (code: number) => {
      settle();
      reject(new Error(`the replay worker exited (code ${code}) while replaying this tape`));
    };
    worker.on('message', ok);
    worker.on('error', bad);
    worker.on('exit', exit);
    worker.postMessage({ file, options });
  });
}

/** The worker's entry: under tsx (this repository's sources) the worker loads TypeScript through it first. */
function startWorker(): Worker {
  const file = path.join(__dirname, `suiteWorker${path.extname(__filename)}`);
  // Resolved here: an eval'd worker resolves bare names from the working folder, which may be any folder.
  const code = __filename.endsWith('.ts')
    ? `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(file)});`
    : `require(${JSON.stringify(file)});`;
  return new Worker(code, { eval: true });
}

/** Replays every tape the arguments name (files, folders, globs: `listTapes`). */
export async function replayTapes(
  patterns: string | string[],
  options: ReplayTapesOptions = {},
): Promise<SuiteReport> {
  const t0 = performance.now();
  const files = [...new Set((Array.isArray(patterns) ? patterns : [patterns]).flatMap((p) => listTapes(p)))];
  const one: ReplayOneOptions =
    options.against !== undefined ? { against: path.resolve(options.against) } : {};
  const jobs = Math.max(1, Math.min(options.jobs ?? os.availableParallelism(), files.length));
  const results = new Map<string, TapeReplayResult>();
  const plain = options.against === undefined ? options.plainWorkflowBundle : undefined;
  const done = async (r: TapeReplayResult) => {
    if (plain && r.status === 'error' && r.error?.code === 'AGENT_CODE_NOT_FOUND' && isBundleFile(r.file))
      r = await plain(r.file);
    results.set(r.file, r);
    options.onResult?.(r);
  };
  if (jobs <= 1) {
    for (const f of files) await done(await replayOne(f, one));
    return summarize(
      files.map((f) => results.get(f)!),
      0,
      performance.now() - t0,
    );
  }
  // Each worker takes the next tape when it hands back a result: long tapes do not hold up a fixed share. A
  // worker that dies (agent code that exhausts memory, say) fails its tape only; a fresh one takes the rest.
  let next = 0;
  await Promise.all(
    Array.from({ length: jobs }, async () => {
      let worker = startWorker();
      try {
        while (next < files.length) {
          const file = files[next++]!;
          try {
            await done(await onWorker(worker, file, one));
          } catch (err) {
            await done({ ...failedReplay(file, err), durationMs: 0 });
            await worker.terminate();
            worker = startWorker();
          }
        }
      } finally {
        await worker.terminate();
      }
    }),
  );
  return summarize(
    files.map((f) => results.get(f)!),
    jobs,
    performance.now() - t0,
  );
}
