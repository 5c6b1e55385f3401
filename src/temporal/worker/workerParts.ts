/**
 * What Jukebox adds to a Temporal worker, built in one place: its activities, its activity interceptors (in
 * the order they must wrap a step), its sinks and the workflow interceptor modules its bundle needs. The
 * plugin (jukeboxPlugin.ts) merges these parts into whatever worker options it is given; a new activity or
 * interceptor of Jukebox's is added here and nowhere else.
 */
import { type ActivityInterceptorsFactory, Runtime, type WorkerOptions } from '@temporalio/worker';
import { type ToolDefinition, ToolRegistry } from '../../agent/tools';
import type { BoothRuntime } from '../../booth/shadowBooth';
import { BreakerFeatureSource } from '../../breaker/featureSource';
import { LlmClient, type LlmEndpoints } from '../../llm';
import type { PriceBook } from '../../llm/pricing';
import type { TapeRecorder } from '../../recorder/recorder';
import { createStepActivities } from '../activities';
import { createApprovalActivities } from '../activities/approvalActivities';
import { createBreakerActivities } from '../activities/breakerActivities';
import { createCommitActivities } from '../activities/commitActivities';
import { createForkActivities } from '../activities/forkActivities';
import { createRecorderActivities } from '../activities/recorderActivities';
import type { StepPayloads } from '../content/stepPayloads';
import { AfterStepInterceptor } from './afterStep';
import { ContentInterceptor } from './contentInterceptor';
import { FailureMappingInterceptor } from './failureMappingInterceptor';
import { KeepAliveInterceptor } from './keepAlive';
import { LocalTimeoutInterceptor } from './localTimeouts';
import { TapeRecordingInterceptor } from './recorderInterceptor';
import { RunKeyInterceptor } from './runKeyInterceptor';
import { tapeSinks } from './tapeSinks';
import type { WorkerTelemetry } from './workerTelemetry';

/** The worker-wide breaker settings; a run's own breaker options travel with the run (AgentRunOptions). */
export interface BreakerWorkerOptions {
  /** Prices for the cost cap and spend velocity; default the built-in table (JUKEBOX_PRICE_TABLE overrides). */
  priceBook?: PriceBook;
  /** The Python interpreter of the code-shape detector for Python code (default `python3`). */
  python?: string;
}

export interface WorkerPartsDeps {
  endpoints: LlmEndpoints;
  tools: readonly ToolDefinition[];
  recorder: TapeRecorder | undefined;
  booth: BoothRuntime | undefined;
  breaker: BreakerWorkerOptions;
  telemetry: WorkerTelemetry | undefined;
  /** The content driver's record of step results (absent when the worker brings external storage of its own). */
  stepPayloads?: StepPayloads;
}

export interface WorkerParts {
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  activityInterceptors: ActivityInterceptorsFactory[];
  sinks: NonNullable<WorkerOptions['sinks']>;
}

export function jukeboxWorkerParts(deps: WorkerPartsDeps): WorkerParts {
  const { recorder, booth, telemetry } = deps;
  // One embedding model per worker, loaded on first use, for the llm step and the breaker's own activities.
  // A model that cannot load is logged once here, through the worker's logger, not per step by each run.
  const breakerFeatures = new BreakerFeatureSource({
    ...(deps.breaker.python ? { python: deps.breaker.python } : {}),
    warn: (message) => Runtime.instance().logger.warn(message),
  });
  const activities = {
    ...createStepActivities({
      breakerFeatures,
      llm: new LlmClient(deps.endpoints),
      tools: new ToolRegistry([...deps.tools]),
      booth,
    }),
    ...createCommitActivities(booth),
    ...createRecorderActivities(recorder),
    ...createForkActivities(recorder, booth),
    ...createBreakerActivities({
      features: breakerFeatures,
      ...(deps.breaker.priceBook ? { priceBook: deps.breaker.priceBook } : {}),
    }),
    ...createApprovalActivities(booth),
  };
  const jukeboxActivityTypes: ReadonlySet<string> = new Set(Object.keys(activities));
  return {
    activities,
    // AfterStep outermost: its work starts once everything inside (the tape's closing fsync included) is done.
    // KeepAlive next: it heartbeats for all the rest; LocalTimeout makes a local step's timeout final as the
    // server does an activity task's. FailureMapping before the recorder, so the recorder sees the original
    // typed errors.
    activityInterceptors: [
      () => ({ inbound: new AfterStepInterceptor() }),
      () => ({ inbound: new RunKeyInterceptor() }),
      (ctx) => ({ inbound: new KeepAliveInterceptor(ctx, jukeboxActivityTypes) }),
      (ctx) => ({ inbound: new LocalTimeoutInterceptor(ctx) }),
      ...(telemetry ? [telemetry.temporalActivityInterceptor] : []),
      () => ({ inbound: new FailureMappingInterceptor() }),
      ...(telemetry ? [telemetry.genAiActivityInterceptor] : []),
      ...(recorder ? [() => ({ inbound: new TapeRecordingInterceptor(recorder) })] : []),
      // Innermost: an input whose content cannot be read fails typed, recorded on the tape like any failure.
      () => ({ inbound: new ContentInterceptor(deps.stepPayloads) }),
    ],
    // The tape sink is always there: a workflow that ran local steps calls its barrier even on a worker
    // without tapes, and an unregistered sink would be logged as an error on every call.
    sinks: { ...telemetry?.sinks, ...tapeSinks(recorder) },
  };
}
