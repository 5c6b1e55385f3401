/**
 * OpenTelemetry GenAI telemetry (semantic conventions pinned in conventions.ts): live spans and metrics from a
 * worker (`createJukeboxWorker({ telemetry })`), linked under Temporal's own spans; a ready OTLP/HTTP pipeline
 * that reports outages once; tapes exported after the fact as OTLP; and the pinned Jaeger used to test it.
 */

export * from './conventions';
export { OtlpEndpointError, TelemetryConfigError, TelemetryExportError } from './errors';
export { type JukeboxTelemetryOptions, LiveTelemetry } from './liveTelemetry';
export { type OtlpSignal, otlpSignalUrl } from './otlpEndpoint';
export { createOtlpTelemetry, type OtlpTelemetry, type OtlpTelemetryOptions } from './otlpPipeline';
export {
  ReportingMetricExporter,
  ReportingSpanExporter,
  reportToStderr,
  type TelemetryErrorReporter,
} from './reportOnce';
export * from './tapeExport';
