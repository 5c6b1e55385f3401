/**
 * OTLP/JSON encoding (opentelemetry-proto 1.x, the JSON mapping of ExportTraceServiceRequest and
 * ExportMetricsServiceRequest): hex ids, 64-bit integers as decimal strings, enums as numbers. Written
 * directly rather than through the SDK's span objects: an export is a pure function of the tape, and a
 * 1,000-step tape should not pay for building live spans it never runs.
 */
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import {
  ATTR,
  DURATION_BUCKETS,
  GENAI_SCHEMA_URL,
  INSTRUMENTATION_NAME,
  METRIC,
  TOKEN_USAGE_BUCKETS,
} from '../conventions';
import type { ChatMeasurement, ExportedSpan, TapeTelemetry } from './tapeSpans';

type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } };

export interface KeyValue {
  key: string;
  value: AnyValue;
}

const SPAN_KIND = { INTERNAL: 1, CLIENT: 3 } as const;
const STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;
const CUMULATIVE = 2;

function anyValue(v: AttributeValue): AnyValue {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  return {
    arrayValue: {
      values: (v as unknown[]).filter((x) => x != null).map((x) => anyValue(x as AttributeValue)),
    },
  };
}

export function keyValues(attributes: Attributes): KeyValue[] {
  const out: KeyValue[] = [];
  for (const [key, value] of Object.entries(attributes))
    if (value !== undefined) out.push({ key, value: anyValue(value) });
  return out;
}

const nanos = (us: number) => `${Math.round(us)}000`;

export interface ExportResourceOptions {
  serviceName: string;
}

function resource(t: TapeTelemetry, o: ExportResourceOptions) {
  return { attributes: keyValues({ 'service.name': o.serviceName, [ATTR.tapeId]: t.tapeId }) };
}

const scope = { name: INSTRUMENTATION_NAME };

function otlpSpan(s: ExportedSpan) {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
    name: s.name,
    kind: SPAN_KIND[s.kind],
    startTimeUnixNano: nanos(s.startUs),
    endTimeUnixNano: nanos(s.endUs),
    attributes: keyValues(s.attributes),
    ...(s.events?.length
      ? {
          events: s.events.map((e) => ({
            timeUnixNano: nanos(e.timeUs),
            name: e.name,
            attributes: keyValues(e.attributes),
          })),
        }
      : {}),
    status: { code: STATUS[s.status.code], ...(s.status.message ? { message: s.status.message } : {}) },
  };
}

export function traceRequest(t: TapeTelemetry, o: ExportResourceOptions) {
  return {
    resourceSpans: [
      {
        resource: resource(t, o),
        scopeSpans: [{ scope, schemaUrl: GENAI_SCHEMA_URL, spans: t.spans.map(otlpSpan) }],
        schemaUrl: GENAI_SCHEMA_URL,
      },
    ],
  };
}

class HistogramPoints {
  private readonly points = new Map<string, { attributes: Attributes; values: number[] }>();
  constructor(private readonly bounds: number[]) {}

  add(attributes: Attributes, value: number): void {
    const key = JSON.stringify(Object.entries(attributes).sort(([a], [b]) => (a < b ? -1 : 1)));
    let p = this.points.get(key);
    if (!p) {
      p = { attributes, values: [] };
      this.points.set(key, p);
    }
    p.values.push(value);
  }

  dataPoints(startUs: number, endUs: number) {
    return [...this.points.values()].map(({ attributes, values }) => {
      const buckets = new Array<number>(this.bounds.length + 1).fill(0);
      // OTLP explicit buckets are (bound[i-1], bound[i]]: a value equal to a bound falls in that bound's bucket.
      for (const v of values) {
        let i = 0;
        while (i < this.bounds.length && v > this.bounds[i]!) i++;
        buckets[i]!++;
      }
      return {
        attributes: keyValues(attributes),
        startTimeUnixNano: nanos(startUs),
        timeUnixNano: nanos(endUs),
        count: String(values.length),
        sum: values.reduce((a, b) => a + b, 0),
        bucketCounts: buckets.map(String),
        explicitBounds: this.bounds,
        min: Math.min(...values),
        max: Math.max(...values),
      };
    });
  }
}

export function metricsRequest(t: TapeTelemetry, o: ExportResourceOptions) {
  const tokens = new HistogramPoints(TOKEN_USAGE_BUCKETS);
  const duration = new HistogramPoints(DURATION_BUCKETS);
  for (const c of t.chats as ChatMeasurement[]) {
    duration.add(c.attributes, c.durationS);
    if (typeof c.inputTokens === 'number')
      tokens.add({ ...c.attributes, [ATTR.tokenType]: 'input' }, c.inputTokens);
    if (typeof c.outputTokens === 'number')
      tokens.add({ ...c.attributes, [ATTR.tokenType]: 'output' }, c.outputTokens);
  }
  const histogram = (name: string, description: string, unit: string, points: HistogramPoints) => ({
    name,
    description,
    unit,
    histogram: { aggregationTemporality: CUMULATIVE, dataPoints: points.dataPoints(t.startUs, t.endUs) },
  });
  return {
    resourceMetrics: [
      {
        resource: resource(t, o),
        scopeMetrics: [
          {
            scope,
            schemaUrl: GENAI_SCHEMA_URL,
            metrics: [
              histogram(METRIC.tokenUsage, 'Number of input and output tokens used', '{token}', tokens),
              histogram(METRIC.operationDuration, 'GenAI operation duration', 's', duration),
            ],
          },
        ],
        schemaUrl: GENAI_SCHEMA_URL,
      },
    ],
  };
}
