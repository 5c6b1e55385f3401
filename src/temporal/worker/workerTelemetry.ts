/**
 * Everything a Temporal worker needs to emit GenAI telemetry, as parts createJukeboxWorker composes with its
 * own: Temporal's activity interceptor (RunActivity spans, parented by the trace context the workflow put in
 * the activity's headers), the GenAI interceptor (chat / execute_tool spans and metrics), the sink that
 * carries workflow spans out of the sandbox, and the workflow bundle that includes the workflow interceptors.
 */
import path from 'node:path';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, WorkerOptions } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTORS_MARKER } from '../../telemetry/conventions';
import { TelemetryConfigError } from '../../telemetry/errors';
import { type JukeboxTelemetryOptions, LiveTelemetry } from '../../telemetry/liveTelemetry';
import { GenAiActivityInterceptor } from './genAiActivityInterceptor';
import { bundleAgentWorkflows, TAPE_OUTCOME_MODULE } from './workflowBundle';

// The workflow bundler compiles it: the .ts source when Jukebox runs from its sources, the .js in a build.
export const WORKFLOW_INTERCEPTORS_MODULE = path.join(
  __dirname,
  `../workflow/telemetryInterceptors${path.extname(__filename)}`,
);

export interface WorkerTelemetry {
  /** Outermost, so the RunActivity span covers the whole attempt. */
  temporalActivityInterceptor: ActivityInterceptorsFactory;
  /** Inside the failure mapping, so error.type is the step's own typed error. */
  genAiActivityInterceptor: ActivityInterceptorsFactory;
  sinks: NonNullable<WorkerOptions['sinks']>;
}

/** A workflow bundle with the telemetry workflow interceptors in it (pass it as `workflowBundle`). */
export function bundleTracedWorkflows(workflowsPath: string) {
  // In the order a worker with JukeboxPlugin({ telemetry }) bundles them, so both builds hash alike.
  return bundleAgentWorkflows({
    workflowsPath,
    workflowInterceptorModules: [TAPE_OUTCOME_MODULE, WORKFLOW_INTERCEPTORS_MODULE],
  });
}

/** Without the workflow interceptors no invoke_agent span exists and activity spans lose their parents. */
export function assertTracedBundle(bundle: NonNullable<WorkerOptions['workflowBundle']>): void {
  if ('code' in bundle && !bundle.code.includes(WORKFLOW_INTERCEPTORS_MARKER))
    throw new TelemetryConfigError(
      'the workflowBundle given with `telemetry` was built without the telemetry workflow interceptors; ' +
        'build it with bundleWorkflowCode({ workflowsPath, plugins: [jukeboxPlugin] }) or bundleTracedWorkflows(workflowsPath), or leave workflowBundle unset',
    );
}

/** `secrets`: literal values to redact from captured content, e.g. the worker's model API keys. */
export function workerTelemetry(
  options: JukeboxTelemetryOptions,
  secrets: readonly string[] = [],
): WorkerTelemetry {
  if (typeof options?.tracerProvider?.getActiveSpanProcessor !== 'function')
    throw new TelemetryConfigError(
      'telemetry.tracerProvider must be an OpenTelemetry SDK tracer provider (BasicTracerProvider or ' +
        'NodeTracerProvider from the 1.x line), whose span processors also receive the workflow spans',
    );
  // Parent links need an active context that follows awaits and a propagator for Temporal's headers; both are
  // process-wide, so an application's own registrations (made first) win.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const live = new LiveTelemetry({
    ...options,
    redaction: { ...options.redaction, secrets: [...(options.redaction?.secrets ?? []), ...secrets] },
  });
  const provider = options.tracerProvider;
  return {
    temporalActivityInterceptor: (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: live.tracer }),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
    genAiActivityInterceptor: (ctx) => ({ inbound: new GenAiActivityInterceptor(live, ctx) }),
    sinks: {
      exporter: makeWorkflowExporter(provider.getActiveSpanProcessor(), provider.resource as Resource),
    },
  };
}
