/**
 * Jukebox as a Temporal plugin: `Worker.create({ ..., plugins: [new JukeboxPlugin({ tools })] })` adds the
 * flight recorder, the Shadow Booth, forks and the circuit breaker to a worker a team already has, and the same
 * object goes to `new Client({ plugins })`. Its options are merged into the worker's by @temporalio/plugin's
 * SimplePlugin (activities and interceptors appended to the worker's own); what SimplePlugin cannot express is
 * done here: the workflow bundle is built before the worker starts, because every tape header carries its hash.
 */
import path from 'node:path';
import type { ClientOptions, ClientPlugin } from '@temporalio/client';
import { SimplePlugin } from '@temporalio/plugin';
import type {
  BundleOptions,
  BundlerPlugin,
  ReplayWorkerOptions,
  Worker,
  WorkerOptions,
  WorkerPlugin,
  WorkflowBundleOption,
} from '@temporalio/worker';
import type { ToolDefinition } from '../../agent/tools';
import { BoothRuntime, type BoothStatus, type ShadowBoothConfig } from '../../booth/shadowBooth';
import { JukeboxError } from '../../errors';
import { endpointsFromEnv, type LlmEndpoints } from '../../llm';
import { hashWorkflowBundle, TapeRecorder, type TapeRecorderOptions } from '../../recorder';
import { contentStoreFor } from '../../recorder/content';
import { FolderTapeStore, type TapeStore, tapeDirFromEnv } from '../../recorder/store';
import type { JukeboxTelemetryOptions } from '../../telemetry';
import { storeWorkflowCode } from '../../timetravel/bundle/codeStore';
import {
  type ContentOptions,
  type JukeboxDataConverter,
  jukeboxDataConverter,
} from '../content/dataConverter';
import { LATENCY_WORKER_OPTIONS } from './latencyOptions';
import { RunSweeper, type RunSweeperOptions } from './runSweeper';
import { tapeSinks } from './tapeSinks';
import { type BreakerWorkerOptions, jukeboxWorkerParts } from './workerParts';
import { assertTracedBundle, WORKFLOW_INTERCEPTORS_MODULE, workerTelemetry } from './workerTelemetry';
import { bundleAgentWorkflows, TAPE_OUTCOME_MODULE } from './workflowBundle';

export const JUKEBOX_PLUGIN_NAME = 'jukebox';

export interface JukeboxPluginOptions {
  /** The tools agents call with `ctx.tool(name, args)`, run as activities on this worker. */
  tools?: readonly ToolDefinition[];
  /** Where `ctx.llm` requests go; default endpointsFromEnv() (API keys, base URLs, JUKEBOX_MODEL_URL). */
  endpoints?: LlmEndpoints;
  /**
   * The flight recorder: on by default, one tape per run under `$JUKEBOX_TAPE_DIR` (else `.jukebox/tapes`) or
   * the store `JUKEBOX_TAPE_STORE` names. `false` switches it off.
   */
  tape?: false | TapeRecorderOptions;
  /**
   * The Shadow Booth: where runs stage files, SQL and MCP calls until `ctx.commit` (docs/shadow-booth.md).
   * Pass a BoothRuntime to share it or to close its MCP connections yourself when the worker stops.
   */
  booth?: ShadowBoothConfig | BoothRuntime;
  /** Worker-wide circuit breaker settings (prices, the Python of the code-shape detector). */
  breaker?: BreakerWorkerOptions;
  /** OpenTelemetry GenAI spans and metrics of every run (docs/telemetry.md). Off unless given. */
  telemetry?: JukeboxTelemetryOptions;
  /**
   * Where payloads too large for the workflow history go (docs/tape-store.md, "The content store"): by default
   * the content store beside the tapes, for payloads from 512 bytes. Every worker and client of a run must
   * reach the same store; a client given this plugin (or made by startAgent) finds it from the environment.
   */
  content?: ContentOptions;
  /**
   * The sweeper for runs the server ended (terminated, timed out, reset) without their code settling their
   * staging or sealing their tape (docs/long-runs.md): on unless `false`.
   */
  sweeper?: false | RunSweeperOptions;
}

/** The plugin was given twice to one worker or client: its activities and interceptors would run twice. */
export class JukeboxPluginGivenTwiceError extends JukeboxError {
  constructor(where: 'worker' | 'client') {
    super(
      'JUKEBOX_PLUGIN_GIVEN_TWICE',
      `JukeboxPlugin was given more than once to this ${where} (in its plugins, or once there and once on its ` +
        'connection): each step would be recorded and intercepted twice. Pass one JukeboxPlugin; put every tool ' +
        'and option into that one.',
      { nonRetryable: true },
    );
  }
}

function assertOnce(plugins: readonly { name: string }[] | undefined, where: 'worker' | 'client'): void {
  if ((plugins ?? []).filter((p) => p.name === JUKEBOX_PLUGIN_NAME).length > 1)
    throw new JukeboxPluginGivenTwiceError(where);
}

export class JukeboxPlugin implements WorkerPlugin, ClientPlugin, BundlerPlugin {
  readonly name = JUKEBOX_PLUGIN_NAME;

  /** What each configured worker (by task queue) records into and stages in, for its sweeper. */
  private readonly sweepTargets = new Map<string, { recorder?: TapeRecorder; booth?: BoothRuntime }>();

  constructor(readonly options: JukeboxPluginOptions = {}) {}

  /** Workflow interceptor modules every bundle of a Jukebox worker includes. */
  get workflowModules(): string[] {
    return [TAPE_OUTCOME_MODULE, ...(this.options.telemetry ? [WORKFLOW_INTERCEPTORS_MODULE] : [])];
  }

  configureClient(options: ClientOptions): ClientOptions {
    assertOnce((options as { plugins?: ClientPlugin[] }).plugins, 'client');
    return { ...options, dataConverter: this.dataConverter(options.dataConverter, 'throw') };
  }

  /**
   * The data converter with the content store's driver (Temporal's external storage), unless the worker or
   * client was given external storage of its own. A worker marks content it cannot read, for the agent workflow
   * to fail the run with a typed error; a client throws it.
   */
  private dataConverter(
    base: WorkerOptions['dataConverter'],
    unresolved: 'throw' | 'mark',
    tapes?: TapeRecorder['store'],
  ): NonNullable<WorkerOptions['dataConverter']> | JukeboxDataConverter {
    if (base?.externalStorage) return base;
    const content = this.options.content;
    return jukeboxDataConverter(
      { ...content, store: content?.store ?? contentStoreFor(tapes), unresolved },
      base ?? {},
    );
  }

  /** So `bundleWorkflowCode({ workflowsPath, plugins: [jukebox] })` builds a bundle the plugin can run. */
  configureBundler(options: BundleOptions): BundleOptions {
    return {
      ...options,
      workflowInterceptorModules: [
        ...(options.workflowInterceptorModules ?? []),
        ...this.workflowModules.filter((m) => !options.workflowInterceptorModules?.includes(m)),
      ],
    };
  }

  async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    assertOnce(options.plugins, 'worker');
    const o = this.options;
    const endpoints = o.endpoints ?? endpointsFromEnv();
    const secrets = Object.values(endpoints).flatMap((e) => (e ? [e.apiKey] : []));
    const telemetry = o.telemetry && workerTelemetry(o.telemetry, secrets);
    const bundle = await this.workflowBundle(options);
    if (telemetry && bundle) assertTracedBundle(bundle);
    let recorder: TapeRecorder | undefined;
    if (o.tape !== false) {
      const tape = o.tape ?? {};
      recorder = new TapeRecorder({
        ...tape,
        agentCodeHash: tape.agentCodeHash ?? (bundle ? await hashWorkflowBundle(bundle) : undefined),
        redaction: { ...tape.redaction, secrets: [...(tape.redaction?.secrets ?? []), ...secrets] },
      });
      // Kept by its hash beside the tapes, so `jbx bundle` can pack the exact code that recorded a run.
      if (bundle && tape.agentCodeHash === undefined)
        await storeWorkflowCode(tape.dir ? path.resolve(tape.dir) : tapeDirFromEnv(), bundle);
    }
    const booth = o.booth instanceof BoothRuntime ? o.booth : o.booth && new BoothRuntime(o.booth);
    const dataConverter = this.dataConverter(options.dataConverter, 'mark', recorder?.store);
    if (booth) await logBoothStatus(await booth.start());
    if (options.taskQueue && (recorder || booth))
      this.sweepTargets.set(options.taskQueue, {
        ...(recorder ? { recorder } : {}),
        ...(booth ? { booth } : {}),
      });
    const parts = jukeboxWorkerParts({
      endpoints,
      tools: o.tools ?? [],
      recorder,
      booth,
      breaker: o.breaker ?? {},
      telemetry,
      ...('stepPayloads' in dataConverter ? { stepPayloads: dataConverter.stepPayloads } : {}),
    });
    const merged = new SimplePlugin({
      name: JUKEBOX_PLUGIN_NAME,
      activities: parts.activities,
      workerInterceptors: { activity: parts.activityInterceptors },
    }).configureWorker(bundle ? { ...options, workflowBundle: bundle, workflowsPath: undefined } : options);
    return {
      ...merged,
      // Bundled here with the interceptor modules in it: left in the options, the worker would warn it ignores them.
      ...(bundle && !options.workflowBundle
        ? { interceptors: { ...merged.interceptors, workflowModules: undefined } }
        : {}),
      maxEagerActivityReservationsPerWorkflowTask:
        merged.maxEagerActivityReservationsPerWorkflowTask ??
        LATENCY_WORKER_OPTIONS.maxEagerActivityReservationsPerWorkflowTask,
      sinks: { ...merged.sinks, ...parts.sinks },
      dataConverter,
    };
  }

  /** The worker runs with its sweeper beside it (runSweeper.ts), stopped when the worker stops. */
  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const targets = this.sweepTargets.get(worker.options.taskQueue);
    const client = worker.client;
    if (this.options.sweeper === false || !targets || !client) return next(worker);
    const { Runtime } = await import('@temporalio/worker');
    const sweeper = new RunSweeper(
      {
        service: client.workflowService,
        namespace: worker.options.namespace,
        taskQueue: worker.options.taskQueue,
        ...targets,
        log: Runtime.instance().logger,
      },
      this.options.sweeper ?? {},
    );
    sweeper.start();
    try {
      await next(worker);
    } finally {
      await sweeper.stop();
    }
  }

  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const modules = options.workflowsPath ? this.workflowModules : [];
    return {
      ...options,
      interceptors: {
        ...options.interceptors,
        workflowModules: [...(options.interceptors?.workflowModules ?? []), ...modules],
      },
      // A replayed workflow still calls the tape barrier; the sink does nothing during replay.
      sinks: { ...options.sinks, ...tapeSinks(undefined) },
      // A history's payloads past the threshold are claims: the replayer reads them from the content store
      // beside the tapes this plugin records into (its `tape` option), as the worker that ran the history did.
      dataConverter: this.dataConverter(options.dataConverter, 'throw', this.replayTapeStore()),
    };
  }

  /** The tape store the `tape` option names, for a replay worker that records nothing but reads content. */
  private replayTapeStore(): TapeStore | undefined {
    const tape = this.options.tape;
    if (!tape) return undefined;
    return tape.store ?? (tape.dir ? new FolderTapeStore({ dir: tape.dir }) : undefined);
  }

  /**
   * The bundle the worker will run: the one it was given, else its workflowsPath bundled here with every
   * plugin's bundler settings (as Worker.create would), so the recorder can hash it. None for a worker that
   * runs activities only.
   */
  private async workflowBundle(options: WorkerOptions): Promise<WorkflowBundleOption | undefined> {
    if (options.workflowBundle) return options.workflowBundle;
    if (!options.workflowsPath) return undefined;
    return bundleAgentWorkflows({
      workflowsPath: options.workflowsPath,
      workflowInterceptorModules: options.interceptors?.workflowModules ?? [],
      ...(options.dataConverter?.payloadConverterPath
        ? { payloadConverterPath: options.dataConverter.payloadConverterPath }
        : {}),
      ...(options.dataConverter?.failureConverterPath
        ? { failureConverterPath: options.dataConverter.failureConverterPath }
        : {}),
      ...(options.bundlerOptions ?? {}),
      plugins: options.plugins ?? [this],
    });
  }
}

/**
 * What the booth found at start-up (it swept what dead workers' shell commands left), in the worker's log:
 * which mechanism enforces each shell limit on this machine.
 */
async function logBoothStatus(status: BoothStatus): Promise<void> {
  const { shell, swept } = status;
  // Loaded here: the plugin also serves clients, which need not load the worker's runtime.
  const { Runtime } = await import('@temporalio/worker');
  Runtime.instance().logger.info('Shadow Booth ready', {
    shellIsolation: shell.isolation,
    shellLimits: shell.limits,
    shellEnforcement: shell.enforcement,
    seccomp: shell.seccomp.detail,
    shellOnWorkerDeath: shell.onWorkerDeath.detail,
    files: status.files,
    sweptScratch: swept.scratch.length,
    sweptGroups: swept.groups.length,
  });
}
