/**
 * What a worker's GenAI interceptor needs, built once per worker from the operator's providers: the tracer,
 * the two client histograms, the content opt-in and the redactor.
 */
import {
  type Attributes,
  type Histogram,
  type MeterProvider,
  metrics,
  type Tracer,
} from '@opentelemetry/api';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { type RedactionOptions, Redactor } from '../recorder/redact';
import {
  ATTR,
  DURATION_BUCKETS,
  GENAI_SCHEMA_URL,
  INSTRUMENTATION_NAME,
  METRIC,
  TOKEN_USAGE_BUCKETS,
} from './conventions';
import { metricAttributes } from './genAiAttributes';

export interface JukeboxTelemetryOptions {
  /**
   * An OpenTelemetry SDK tracer provider (BasicTracerProvider, NodeTracerProvider): activity spans are
   * created with it, and workflow spans (which Temporal builds inside the workflow sandbox) reach its span
   * processors through a sink.
   */
  tracerProvider: BasicTracerProvider;
  /** Where gen_ai.client.token.usage and gen_ai.client.operation.duration go; default the global one. */
  meterProvider?: MeterProvider;
  /**
   * Put message content (gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions, tool
   * arguments and results) on spans. Off by default; when on, content is redacted like a tape's.
   */
  captureContent?: boolean;
  /** Extra redaction on top of the defaults (API keys in the environment, `sk-...`, bearer tokens). */
  redaction?: RedactionOptions;
}

export class LiveTelemetry {
  readonly tracer: Tracer;
  readonly captureContent: boolean;
  readonly redactor: Redactor;
  private readonly tokenUsage: Histogram;
  private readonly duration: Histogram;

  constructor(readonly options: JukeboxTelemetryOptions) {
    this.tracer = options.tracerProvider.getTracer(INSTRUMENTATION_NAME, undefined, {
      schemaUrl: GENAI_SCHEMA_URL,
    });
    this.captureContent = options.captureContent ?? false;
    this.redactor = new Redactor(options.redaction);
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(
      INSTRUMENTATION_NAME,
      undefined,
      {
        schemaUrl: GENAI_SCHEMA_URL,
      },
    );
    this.tokenUsage = meter.createHistogram(METRIC.tokenUsage, {
      description: 'Number of input and output tokens used',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_USAGE_BUCKETS },
    });
    this.duration = meter.createHistogram(METRIC.operationDuration, {
      description: 'GenAI operation duration',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
  }

  /** One model call's metrics; `usage` is absent when the call failed. */
  recordChat(
    spanAttributes: Attributes,
    startedMs: number,
    usage?: { inputTokens: number; outputTokens: number },
  ) {
    const a = metricAttributes(spanAttributes);
    this.duration.record((performance.now() - startedMs) / 1000, a);
    if (!usage) return;
    this.tokenUsage.record(usage.inputTokens, { ...a, [ATTR.tokenType]: 'input' });
    this.tokenUsage.record(usage.outputTokens, { ...a, [ATTR.tokenType]: 'output' });
  }
}
