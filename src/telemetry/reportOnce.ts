/**
 * Wraps OTLP exporters so a dead endpoint costs one report, not one per batch: a run keeps going and its tape
 * keeps recording whatever the collector does, and an operator needs to hear about it once, with what to fix.
 * After the endpoint answers again, a new outage is reported again.
 */
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { TelemetryExportError } from './errors';

export type TelemetryErrorReporter = (error: TelemetryExportError) => void;

export const reportToStderr: TelemetryErrorReporter = (error) =>
  process.stderr.write(`jukebox: telemetry: ${error.message}\n`);

class OutageLatch {
  private down = false;
  constructor(
    private readonly signal: 'traces' | 'metrics',
    private readonly endpoint: string,
    private readonly report: TelemetryErrorReporter,
  ) {}

  observe(result: ExportResult): void {
    if (result.code === ExportResultCode.SUCCESS) {
      this.down = false;
      return;
    }
    if (this.down) return;
    this.down = true;
    try {
      this.report(
        new TelemetryExportError(this.signal, this.endpoint, result.error ?? 'export failed', true),
      );
    } catch {
      // A reporter that throws must not break the exporter pipeline it reports on.
    }
  }
}

export class ReportingSpanExporter implements SpanExporter {
  private readonly latch: OutageLatch;
  constructor(
    private readonly inner: SpanExporter,
    endpoint: string,
    report: TelemetryErrorReporter = reportToStderr,
  ) {
    this.latch = new OutageLatch('traces', endpoint, report);
  }
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      this.latch.observe(result);
      done(result);
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

export class ReportingMetricExporter implements PushMetricExporter {
  private readonly latch: OutageLatch;
  constructor(
    private readonly inner: PushMetricExporter,
    endpoint: string,
    report: TelemetryErrorReporter = reportToStderr,
  ) {
    this.latch = new OutageLatch('metrics', endpoint, report);
    if (inner.selectAggregationTemporality)
      this.selectAggregationTemporality = inner.selectAggregationTemporality.bind(inner);
    if (inner.selectAggregation) this.selectAggregation = inner.selectAggregation.bind(inner);
  }
  selectAggregationTemporality?: PushMetricExporter['selectAggregationTemporality'];
  selectAggregation?: PushMetricExporter['selectAggregation'];
  export(metrics: ResourceMetrics, done: (result: ExportResult) => void): void {
    this.inner.export(metrics, (result) => {
      this.latch.observe(result);
      done(result);
    });
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
