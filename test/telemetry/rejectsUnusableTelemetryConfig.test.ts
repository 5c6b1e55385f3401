import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { beforeAll, describe, expect, it } from 'vitest';
import { OtlpEndpointError, otlpSignalUrl, TelemetryConfigError } from '../../src/telemetry';
import {
  assertTracedBundle,
  bundleAgentWorkflows,
  bundleTracedWorkflows,
  workerTelemetry,
} from '../../src/temporal';
import { TELEMETRY_WORKFLOWS } from './telemetryWorker';

describe('telemetry configuration a worker cannot use', () => {
  let traced: Awaited<ReturnType<typeof bundleTracedWorkflows>>;
  let plain: Awaited<ReturnType<typeof bundleAgentWorkflows>>;
  beforeAll(async () => {
    // Bundling takes seconds: once each for the file.
    [traced, plain] = await Promise.all([
      bundleTracedWorkflows(TELEMETRY_WORKFLOWS),
      bundleAgentWorkflows(TELEMETRY_WORKFLOWS),
    ]);
  });

  it('refuses a workflow bundle built without the telemetry workflow interceptors, and accepts a traced one', async () => {
    let err: unknown;
    try {
      assertTracedBundle(plain);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TelemetryConfigError);
    expect((err as TelemetryConfigError).code).toBe('TELEMETRY_CONFIG');
    expect((err as TelemetryConfigError).nonRetryable).toBe(true);
    expect((err as Error).message).toContain('bundleTracedWorkflows');
    expect(() => assertTracedBundle(traced)).not.toThrow();
  });

  it('refuses a tracer provider that is not an SDK provider, saying which kind it needs', () => {
    expect(() => workerTelemetry({ tracerProvider: {} as BasicTracerProvider })).toThrow(
      TelemetryConfigError,
    );
    expect(() => workerTelemetry({ tracerProvider: {} as BasicTracerProvider })).toThrow(
      /BasicTracerProvider/,
    );
    expect(() => workerTelemetry({ tracerProvider: new BasicTracerProvider() })).not.toThrow();
  });

  it('turns a collector base URL into per-signal OTLP/HTTP URLs and rejects what is not http(s)', () => {
    expect(otlpSignalUrl('http://127.0.0.1:4318', 'traces')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(otlpSignalUrl('https://otel.example.com/prefix/', 'metrics')).toBe(
      'https://otel.example.com/prefix/v1/metrics',
    );
    expect(otlpSignalUrl('http://c:4318/v1/traces', 'traces')).toBe('http://c:4318/v1/traces');
    expect(otlpSignalUrl('http://c:4318/v1/traces', 'metrics')).toBe('http://c:4318/v1/metrics');
    expect(() => otlpSignalUrl('localhost:4318', 'traces')).toThrow(OtlpEndpointError);
    expect(() => otlpSignalUrl('not a url', 'traces')).toThrow(/is not a URL/);
    expect(() => otlpSignalUrl('grpc://c:4317', 'traces')).toThrow(/OTLP\/HTTP needs http: or https:/);
  });
});
