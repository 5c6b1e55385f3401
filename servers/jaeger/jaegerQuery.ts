/** The slice of Jaeger's query HTTP API that tests and operators use to find exported runs. */
import { JaegerQueryError } from './errors';

export interface JaegerTag {
  key: string;
  type: string;
  value: unknown;
}

export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: JaegerTag[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: JaegerTag[] }>;
}

async function getJson<T>(url: string): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new JaegerQueryError(url, 'no answer', err);
  }
  const text = await res.text();
  if (!res.ok) throw new JaegerQueryError(url, `HTTP ${res.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text) as T;
}

export async function jaegerTraces(queryUrl: string, service: string, limit = 20): Promise<JaegerTrace[]> {
  const q = new URLSearchParams({ service, limit: String(limit), lookback: '7d' });
  return (await getJson<{ data: JaegerTrace[] | null }>(`${queryUrl}/api/traces?${q}`)).data ?? [];
}

/** The trace, or undefined when Jaeger does not hold it (yet). */
export async function jaegerTrace(queryUrl: string, traceId: string): Promise<JaegerTrace | undefined> {
  try {
    return (await getJson<{ data: JaegerTrace[] }>(`${queryUrl}/api/traces/${traceId}`)).data?.[0];
  } catch (err) {
    if (err instanceof JaegerQueryError && /HTTP 404/.test(err.message)) return undefined;
    throw err;
  }
}

/** A span's tags as a plain object. */
export function jaegerTags(span: JaegerSpan): Record<string, unknown> {
  return Object.fromEntries(span.tags.map((t) => [t.key, t.value]));
}
