/**
 * Forking a recorded run: validates the request against the parent tape (nothing is started when it is
 * wrong, and the parent is only ever read), then starts a new Temporal workflow of the same type, its id
 * linked to the parent, whose steps before the fork point are answered from the parent tape and whose later
 * steps run live with the overrides.
 */
import path from 'node:path';
import { Client, type Connection, type WorkflowHandle } from '@temporalio/client';
import type { AgentRunResult } from '../../agent/context';
import type { Provider } from '../../llm/types';
import { tapeFileName } from '../../recorder/naming';
import { tapeDirFromEnv } from '../../recorder/store';
import { ForkRequestError } from '../../timetravel/fork/errors';
import { type ForkPoint, stepAtEvent } from '../../timetravel/fork/historyPoint';
import type { ForkRunOptions } from '../../timetravel/fork/lineage';
import type { ForkOverrides, OverrideLayer } from '../../timetravel/fork/overrides';
import { inheritedChain } from '../../timetravel/fork/parentTape';
import { readTimeline, type Timeline } from '../../timetravel/replay/timeline';
import type { ContentOptions } from '../content/dataConverter';
import type { AgentRunOptions } from '../workflow/runOptions';
import { jukeboxClient } from './jukeboxClient';
import { loadRunHistory, type RunHistory } from './runHistory';
import { captureRunHistory } from './storedHistory';

export const PROVIDERS: readonly Provider[] = ['openai', 'anthropic'];

/** Model families each provider is known to serve; `models` in jukebox.config.json adds more. */
const MODEL_FAMILIES: Record<Provider, RegExp> = {
  openai: /^(gpt-|o[1-9](-|$)|chatgpt-|text-embedding-)/,
  anthropic: /^claude-/,
};

export interface ForkRequest {
  parentTape: string;
  /** Fork at this step: it and later steps run live. */
  atStep?: number;
  /** Or at this frame index, which must be the first frame of a step. */
  atFrame?: number;
  overrides?: ForkOverrides;
  /** Extra model names to accept (the project configuration's `models`). */
  knownModels?: readonly string[];
}

export interface ValidatedFork {
  parent: Timeline;
  fork: ForkRunOptions;
  input: unknown;
}

/** The override layers a parent tape was itself recorded with (none unless it is a fork). */
export function parentLayers(t: Timeline): OverrideLayer[] {
  const layers = (t.tape.header.meta?.fork as { layers?: unknown } | undefined)?.layers;
  return Array.isArray(layers) ? (layers as OverrideLayer[]) : [];
}

function stepBoundaries(t: Timeline): string {
  return t.steps.map((s) => `step ${s.step} = frame ${s.firstFrame}`).join(', ');
}

/** Every check that needs no server: run before anything starts. */
export function validateFork(request: ForkRequest, parent?: Timeline): ValidatedFork {
  const file = path.resolve(request.parentTape);
  const t = parent ?? readTimeline(file);
  const stepCount = t.steps.length;
  let atStep = request.atStep;
  if (atStep !== undefined && request.atFrame !== undefined)
    throw new ForkRequestError('give either a step or a frame to fork at, not both');
  if (request.atFrame !== undefined) {
    const f = t.tape.frames[request.atFrame];
    if (!f)
      throw new ForkRequestError(
        `${file} has ${t.tape.frames.length} frames; frame ${request.atFrame} is past the end`,
      );
    const s = t.steps.find((x) => x.step === f.step);
    if (!s || f.kind === 'outcome' || f.kind === 'seal')
      throw new ForkRequestError(
        `frame ${request.atFrame} (${f.kind}) is not part of a step; fork at a step: ${stepBoundaries(t)}`,
      );
    if (s.firstFrame !== request.atFrame)
      throw new ForkRequestError(
        `frame ${request.atFrame} (${f.kind}) is inside step ${s.step}, which starts at frame ${s.firstFrame}; ` +
          `a fork starts at a step boundary: use --at ${s.step} (or frame ${s.firstFrame})`,
      );
    atStep = s.step;
  }
  if (atStep === undefined) throw new ForkRequestError('say where to fork: a step (--at STEP) or a frame');
  if (!Number.isInteger(atStep) || atStep < 0)
    throw new ForkRequestError(`the fork step must be a non-negative integer, got ${atStep}`);
  if (atStep > stepCount)
    throw new ForkRequestError(
      `${file} has ${stepCount} steps (0..${stepCount - 1}); step ${atStep} is past its end. Fork at a step up to ${stepCount}`,
    );
  const o = request.overrides ?? {};
  if (o.provider !== undefined && !PROVIDERS.includes(o.provider))
    throw new ForkRequestError(
      `unknown provider ${JSON.stringify(o.provider)}; use one of ${PROVIDERS.join(', ')}`,
    );
  if (o.model !== undefined) {
    const at =
      t.steps.find((s) => s.step >= atStep && s.kind === 'llm') ??
      [...t.steps].reverse().find((s) => s.kind === 'llm');
    const provider = (o.provider ?? at?.request?.provider ?? 'openai') as Provider;
    const recorded = new Set(t.steps.flatMap((s) => (s.request ? [s.request.model] : [])));
    const known =
      recorded.has(o.model) ||
      request.knownModels?.includes(o.model) ||
      MODEL_FAMILIES[provider]?.test(o.model);
    if (!known)
      throw new ForkRequestError(
        `unknown model ${JSON.stringify(o.model)} for provider ${provider}: not a ${provider} model family (${MODEL_FAMILIES[provider]}), ` +
          `not used by the parent run (${[...recorded].join(', ') || 'no model calls'}), and not in "models" of jukebox.config.json; fix the name or add it there`,
      );
  }
  if (!t.input.present && stepCount > 0)
    throw new ForkRequestError(`${file} does not hold its run input (an older tape), so it cannot be forked`);
  return {
    parent: t,
    input: t.input.value,
    fork: {
      parentTape: file,
      parentTapeId: t.tape.header.tapeId,
      parentTapeHash: inheritedChain(t, atStep),
      forkStep: atStep,
      ...(request.overrides ? { overrides: request.overrides } : {}),
      layers: [
        ...parentLayers(t),
        ...(request.overrides ? [{ fromStep: atStep, overrides: request.overrides }] : []),
      ],
    },
  };
}

export interface StartForkOptions extends ForkRequest {
  connection: Connection;
  namespace: string;
  /** Default: the parent's task queue (from its tape header). */
  taskQueue?: string;
  workflowId?: string;
  runOptions?: Omit<AgentRunOptions, 'fork'>;
  /** The runs' content store, as the workers have it (default: the one the environment names). */
  content?: ContentOptions;
}

export interface StartedFork {
  handle: WorkflowHandle<(input: unknown, options?: AgentRunOptions) => Promise<AgentRunResult<unknown>>>;
  workflowId: string;
  runId: string;
  fork: ForkRunOptions;
  parent: Timeline;
}

export async function startFork(options: StartForkOptions): Promise<StartedFork> {
  const v = validateFork(options);
  const h = v.parent.tape.header;
  const client = jukeboxClient(options.connection, options.namespace, options.content);
  // The id says whose fork it is and where; the memo links it to the parent for the Web UI and tools.
  const workflowId =
    options.workflowId ??
    `${h.workflowId}.fork-${v.fork.forkStep}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const handle = await client.workflow.start<
    (input: unknown, options?: AgentRunOptions) => Promise<AgentRunResult<unknown>>
  >(h.workflowType, {
    taskQueue: options.taskQueue ?? h.taskQueue,
    workflowId,
    args: [v.input, { ...options.runOptions, fork: v.fork }],
    memo: {
      jukeboxParent: {
        workflowId: h.workflowId,
        runId: h.runId,
        tapeId: h.tapeId,
        forkStep: v.fork.forkStep,
      },
    },
  });
  return { handle, workflowId, runId: handle.firstExecutionRunId, fork: v.fork, parent: v.parent };
}

export interface FinishedFork extends StartedFork {
  result?: AgentRunResult<unknown>;
  error?: string;
  tapeFile: string;
  /** For a fork at a history event: the event and the step it mapped to. */
  point?: ForkPoint;
}

/** A fork at a Temporal history event of a recorded run (the ids the Web UI shows), instead of a tape step. */
export interface HistoryForkRequest {
  workflowId: string;
  /**
   * Default: the newest tape of workflowId in the tape folder, else the server's latest run. For a run that
   * continued as new, the execution whose history holds eventId (required: event ids start again in each).
   */
  runId?: string;
  eventId: number;
}

export type HistoryForkOptions = Omit<StartForkOptions, 'parentTape' | 'atStep' | 'atFrame'> &
  HistoryForkRequest & { tapeDir?: string };

/**
 * Maps a history event to the step a fork starts at: reads the run's tape from the tape folder and its history
 * (stored beside the tape, else from the server, then stored), checks that they belong together.
 */
export async function resolveHistoryFork(
  options: HistoryForkOptions,
): Promise<{ request: StartForkOptions; point: ForkPoint; run: RunHistory }> {
  if (!Number.isSafeInteger(options.eventId) || options.eventId < 1)
    throw new ForkRequestError(`a history event id is a positive integer, got ${options.eventId}`);
  const tapeDir = options.tapeDir ?? tapeDirFromEnv();
  const run = await loadRunHistory({
    workflowId: options.workflowId,
    ...(options.runId ? { runId: options.runId } : {}),
    tapeDir,
    client: new Client({ connection: options.connection, namespace: options.namespace }),
    serverName: `namespace ${options.namespace}`,
  });
  // A run that continued as new: event ids start again in each execution, and runId says whose it is.
  const segment = run.segments.length > 1 ? options.runId : undefined;
  const point = stepAtEvent(run.alignment, options.eventId, run.tapeFile, segment);
  const { workflowId: _w, runId: _r, eventId: _e, tapeDir: _d, ...rest } = options;
  return { request: { ...rest, parentTape: run.tapeFile, atStep: point.step }, point, run };
}

/**
 * Starts a fork, waits for it, and stores its history beside its tape (so it can be replayed and forked). The
 * fork point is a tape step (`parentTape` + `atStep` / `atFrame`) or a history event (`workflowId` +
 * `eventId`, optionally `runId`).
 */
export async function forkRun(
  options: (StartForkOptions & { tapeDir?: string }) | HistoryForkOptions,
): Promise<FinishedFork> {
  let point: ForkPoint | undefined;
  let request: StartForkOptions;
  if ('eventId' in options) {
    const resolved = await resolveHistoryFork(options);
    point = resolved.point;
    request = resolved.request;
  } else request = options;
  const started = await startFork(request);
  const tapeDir = options.tapeDir ?? tapeDirFromEnv();
  const out: FinishedFork = {
    ...started,
    tapeFile: path.join(tapeDir, tapeFileName(started.workflowId, started.runId)),
    ...(point ? { point } : {}),
  };
  try {
    out.result = await started.handle.result();
  } catch (err) {
    // Temporal wraps the cause twice (workflow failed ← activity failed ← the step's own error): say all three.
    const parts: string[] = [];
    for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e)
      if (e.message) parts.push(e.message);
    out.error = parts.join(': ') || String(err);
  }
  await captureRunHistory(started.handle, tapeDir);
  return out;
}
