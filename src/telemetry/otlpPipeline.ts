/**
 * A ready tracer and meter provider exporting over OTLP/HTTP to one collector (Jaeger, the OpenTelemetry
 * Collector, a vendor's endpoint), with outages reported once. Pass them as createJukeboxWorker's `telemetry`.
 */
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { requireOptional } from '../errors/optionalDependency';
import { otlpSignalUrl } from './otlpEndpoint';
import {
  ReportingMetricExporter,
  ReportingSpanExporter,
  reportToStderr,
  type TelemetryErrorReporter,
} from './reportOnce';

export interface OtlpTelemetryOptions {
  /** The collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318. */
  url: string;
  serviceName?: string;
  /** Default: one line on stderr per outage. */
  onError?: TelemetryErrorReporter;
  metricIntervalMs?: number;
  /** Per-request timeout of the exporters. */
  timeoutMillis?: number;
}

export interface OtlpTelemetry {
  tracerProvider: BasicTracerProvider;
  meterProvider: MeterProvider;
  /** Sends what is buffered. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export function createOtlpTelemetry(options: OtlpTelemetryOptions): OtlpTelemetry {
  // The OpenTelemetry SDK and exporters are optional peers: only an application that asks for this pipeline loads them.
  const feature = 'createOtlpTelemetry (OpenTelemetry export over OTLP/HTTP)';
  const { OTLPMetricExporter } = requireOptional<typeof import('@opentelemetry/exporter-metrics-otlp-http')>(
    '@opentelemetry/exporter-metrics-otlp-http',
    feature,
  );
  const { OTLPTraceExporter } = requireOptional<typeof import('@opentelemetry/exporter-trace-otlp-http')>(
    '@opentelemetry/exporter-trace-otlp-http',
    feature,
  );
  const { Resource } = requireOptional<typeof import('@opentelemetry/resources')>(
    '@opentelemetry/resources',
    feature,
  );
  const { MeterProvider, PeriodicExportingMetricReader } = requireOptional<
    typeof import('@opentelemetry/sdk-metrics')
  >('@opentelemetry/sdk-metrics', feature);
  const { BasicTracerProvider, BatchSpanProcessor } = requireOptional<
    typeof import('@opentelemetry/sdk-trace-base')
  >('@opentelemetry/sdk-trace-base', feature);
  const report = options.onError ?? reportToStderr;
  const tracesUrl = otlpSignalUrl(options.url, 'traces');
  const metricsUrl = otlpSignalUrl(options.url, 'metrics');
  const resource = new Resource({ 'service.name': options.serviceName ?? 'jukebox-worker' });
  const timeoutMillis = options.timeoutMillis ?? 10_000;
  const interval = options.metricIntervalMs ?? 60_000;
  const tracerProvider = new BasicTracerProvider({ resource });
  tracerProvider.addSpanProcessor(
    new BatchSpanProcessor(
      new ReportingSpanExporter(new OTLPTraceExporter({ url: tracesUrl, timeoutMillis }), tracesUrl, report),
    ),
  );
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new ReportingMetricExporter(
          new OTLPMetricExporter({ url: metricsUrl, timeoutMillis }),
          metricsUrl,
          report,
        ),
        exportIntervalMillis: interval,
        // The SDK requires the timeout to fit in the interval.
        exportTimeoutMillis: Math.min(timeoutMillis, interval),
      }),
    ],
  });
  return {
    tracerProvider,
    meterProvider,
    async flush() {
      // Failures were reported through onError; a flush itself never throws into the caller's run.
      await Promise.allSettled([tracerProvider.forceFlush(), meterProvider.forceFlush()]);
    },
    async shutdown() {
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}
