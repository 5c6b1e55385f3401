/** `jbx export` as a library call: a tape file (or a read tape) to OTLP/JSON trace and metrics requests. */
import { type RedactionOptions, Redactor } from '../../recorder/redact';
import { readTape, type Tape } from '../../recorder/tape';
import { metricsRequest, traceRequest } from './otlpJson';
import { type TapeTelemetry, tapeTelemetry } from './tapeSpans';

export interface TapeExportOptions {
  /** Message content on the spans, redacted; off by default like live telemetry. */
  captureContent?: boolean;
  redaction?: RedactionOptions;
  /** `service.name` of the exported resource; default `jukebox`. */
  serviceName?: string;
}

export interface TapeExport {
  telemetry: TapeTelemetry;
  /** ExportTraceServiceRequest, OTLP/JSON. */
  traces: ReturnType<typeof traceRequest>;
  /** ExportMetricsServiceRequest, OTLP/JSON. */
  metrics: ReturnType<typeof metricsRequest>;
}

export function exportTape(tape: string | Tape, options: TapeExportOptions = {}): TapeExport {
  // A damaged tape still exports what verified before the damage; the header must be sound.
  const read = typeof tape === 'string' ? readTape(tape, { recover: true }) : tape;
  const telemetry = tapeTelemetry(read, {
    captureContent: options.captureContent,
    redactor: new Redactor(options.redaction),
  });
  const resource = { serviceName: options.serviceName ?? 'jukebox' };
  return {
    telemetry,
    traces: traceRequest(telemetry, resource),
    metrics: metricsRequest(telemetry, resource),
  };
}
