import path from 'node:path';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ToolDefinition, ToolRegistry } from '../../agent/tools';
import { BoothRuntime, type ShadowBoothConfig } from '../../booth/shadowBooth';
import { BreakerFeatureSource } from '../../breaker/featureSource';
import { LlmClient, type LlmEndpoints } from '../../llm';
import { hashWorkflowBundle, TapeRecorder, type TapeRecorderOptions } from '../../recorder';
import { tapeDirFromEnv } from '../../recorder/store';
import type { JukeboxTelemetryOptions } from '../../telemetry';
import { storeWorkflowCode } from '../../timetravel/bundle/codeStore';
import { createStepActivities } from '../activities';
import { createApprovalActivities } from '../activities/approvalActivities';
import { createBreakerActivities } from '../activities/breakerActivities';
import { createCommitActivities } from '../activities/commitActivities';
import { createForkActivities } from '../activities/forkActivities';
import { createRecorderActivities } from '../activities/recorderActivities';
import { AfterStepInterceptor } from './afterStep';
import { FailureMappingInterceptor } from './failureMappingInterceptor';
import { KeepAliveInterceptor } from './keepAlive';
import { LATENCY_WORKER_OPTIONS } from './latencyOptions';
import { TapeRecordingInterceptor } from './recorderInterceptor';
import { tapeSinks } from './tapeSinks';
import { assertTracedBundle, bundleTracedWorkflows, workerTelemetry } from './workerTelemetry';
import { bundleAgentWorkflows, DEFAULT_WORKFLOWS_PATH } from './workflowBundle';

export const DEFAULT_TASK_QUEUE = 'jukebox';

export interface JukeboxWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  endpoints: LlmEndpoints;
  tools: ToolDefinition[];
  /** Defaults to this repository's examples/workflows.ts; point it at your own module exporting agentWorkflow(...)s. */
  workflowsPath?: string;
  /** A pre-built bundle saves the seconds of bundling when many workers start (tests, benchmarks). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * The flight recorder: on by default, writing one tape per run under `$JUKEBOX_TAPE_DIR` (else
   * `.jukebox/tapes`). `false` switches it off for this worker, e.g. for benchmarks that measure its cost.
   */
  tape?: false | TapeRecorderOptions;
  /** OpenTelemetry GenAI spans and metrics of every run (docs/telemetry.md). Off unless given. */
  telemetry?: JukeboxTelemetryOptions;
  /**
   * The Shadow Booth: where runs stage files, SQL and MCP calls until `ctx.commit` (docs/shadow-booth.md).
   * Pass a BoothRuntime to share it or to close its MCP connections yourself when the worker stops.
   */
  booth?: ShadowBoothConfig | BoothRuntime;
  /**
   * Temporal worker settings layered over LATENCY_WORKER_OPTIONS (docs/performance.md), e.g. poller counts or
   * the sticky cache size for a worker that runs many agents at once.
   */
  workerOptions?: Partial<
    Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'activities' | 'interceptors' | 'sinks'>
  >;
}

export async function createJukeboxWorker(options: JukeboxWorkerOptions): Promise<Worker> {
  const telemetry =
    options.telemetry &&
    workerTelemetry(
      options.telemetry,
      Object.values(options.endpoints).flatMap((e) => (e ? [e.apiKey] : [])),
    );
  let bundle = options.workflowBundle;
  if (telemetry) bundle ??= await bundleTracedWorkflows(options.workflowsPath);
  if (telemetry && bundle) assertTracedBundle(bundle);
  let recorder: TapeRecorder | undefined;
  if (options.tape !== false) {
    // Recording needs the bundle's hash for the tape header, so bundle here what Worker.create would bundle.
    bundle ??= await bundleAgentWorkflows(options.workflowsPath);
    const tape = options.tape ?? {};
    const endpointKeys = Object.values(options.endpoints).flatMap((e) => (e ? [e.apiKey] : []));
    recorder = new TapeRecorder({
      ...tape,
      agentCodeHash: tape.agentCodeHash ?? (await hashWorkflowBundle(bundle)),
      redaction: { ...tape.redaction, secrets: [...(tape.redaction?.secrets ?? []), ...endpointKeys] },
    });
    // Kept by its hash beside the tapes, so `jbx bundle` can pack the exact code that recorded a run.
    if (tape.agentCodeHash === undefined)
      await storeWorkflowCode(tape.dir ? path.resolve(tape.dir) : tapeDirFromEnv(), bundle);
  }
  const booth =
    options.booth instanceof BoothRuntime ? options.booth : options.booth && new BoothRuntime(options.booth);
  // One embedding model per worker, loaded on first use, for the llm step and the breaker's own activities.
  const breakerFeatures = new BreakerFeatureSource();
  const activities = {
    ...createStepActivities({
      breakerFeatures,
      llm: new LlmClient(options.endpoints),
      tools: new ToolRegistry(options.tools),
      booth,
    }),
    ...createCommitActivities(booth),
    ...createRecorderActivities(recorder),
    ...createForkActivities(recorder, booth),
    ...createBreakerActivities({ features: breakerFeatures }),
    ...createApprovalActivities(booth),
  };
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(bundle
      ? { workflowBundle: bundle }
      : { workflowsPath: options.workflowsPath ?? DEFAULT_WORKFLOWS_PATH }),
    activities,
    // AfterStep outermost: its work starts once everything inside (the tape's closing fsync included) is done.
    // KeepAlive next: it heartbeats for all the rest. FailureMapping before the recorder, so the recorder sees
    // the original typed errors.
    interceptors: {
      activity: [
        () => ({ inbound: new AfterStepInterceptor() }),
        (ctx) => ({ inbound: new KeepAliveInterceptor(ctx) }),
        ...(telemetry ? [telemetry.temporalActivityInterceptor] : []),
        () => ({ inbound: new FailureMappingInterceptor() }),
        ...(telemetry ? [telemetry.genAiActivityInterceptor] : []),
        ...(recorder ? [() => ({ inbound: new TapeRecordingInterceptor(recorder) })] : []),
      ],
    },
    // The tape sink is always there: a workflow that ran local steps calls its barrier even on a worker
    // without tapes, and an unregistered sink would be logged as an error on every call.
    sinks: { ...(telemetry?.sinks ?? {}), ...tapeSinks(recorder) },
    ...LATENCY_WORKER_OPTIONS,
    ...options.workerOptions,
  });
}
