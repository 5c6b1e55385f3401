import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../examples/sample/agent';
import { freePort } from '../../servers/devserver';
import { jaegerTraces, startJaeger } from '../../servers/jaeger';
import { TapeStore } from '../../src/recorder';
import { verifyTape } from '../../src/recorder/tape';
import { createOtlpTelemetry, type OtlpTelemetry, TelemetryExportError } from '../../src/telemetry';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { jbx } from './cli';
import { startTelemetryWorker } from './telemetryWorker';

const SAMPLE_SCRIPT = path.join(__dirname, '../../examples/sample/script.yaml');

describe('telemetry to an OTLP endpoint nobody listens on', () => {
  let model: ModelServer;
  let worker: Awaited<ReturnType<typeof startTelemetryWorker>>;
  let otlp: OtlpTelemetry;
  let url: string;
  const errors: TelemetryExportError[] = [];

  beforeAll(async () => {
    url = `http://127.0.0.1:${await freePort()}`;
    model = await startModelServer({ script: SAMPLE_SCRIPT });
    otlp = createOtlpTelemetry({
      url,
      onError: (e) => errors.push(e),
      metricIntervalMs: 100,
      timeoutMillis: 2_000,
    });
    worker = await startTelemetryWorker(model.url, {
      tracerProvider: otlp.tracerProvider,
      meterProvider: otlp.meterProvider,
    });
  });
  afterAll(async () => {
    await worker?.close();
    await otlp?.shutdown();
    await model?.close();
  });

  it('lets runs complete and record, and reports the outage once per signal, not per span', async () => {
    const runs = [];
    for (let i = 0; i < 2; i++) {
      model.loadScript(SAMPLE_SCRIPT);
      runs.push(
        await worker.run<ResearchOutput>({
          question: 'How far is the distance to the Moon?',
        }),
      );
      // Each flush is one more failed export batch of the run's spans.
      await otlp.flush();
    }
    for (const r of runs) {
      expect(r.result.output.turns).toBe(4);
      const tape = new TapeStore({ dir: worker.tapeDir }).pathFor(r.workflowId, r.runId);
      expect(verifyTape(tape)).toMatchObject({ ok: true, sealed: true });
    }
    // Several metric intervals pass, each one a failed export.
    await new Promise((r) => setTimeout(r, 600));
    await otlp.flush();

    expect(errors.map((e) => e.signal).sort()).toEqual(['metrics', 'traces']);
    for (const e of errors) {
      expect(e).toBeInstanceOf(TelemetryExportError);
      expect(e.code).toBe('TELEMETRY_EXPORT_FAILED');
      expect(e.nonRetryable).toBe(false);
      expect(e.message).toContain(`${url}/v1/${e.signal}`);
      expect(e.message).toContain('Runs and recording go on');
    }
  });

  it('jbx export --otlp to it fails with exit 1 and one message saying what to check', async () => {
    model.loadScript(SAMPLE_SCRIPT);
    const { workflowId, runId } = await worker.run<ResearchOutput>({
      question: 'How far is the distance to the Moon?',
    });
    const tape = new TapeStore({ dir: worker.tapeDir }).pathFor(workflowId, runId);
    const r = jbx('export', tape, '--otlp', url);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`could not export traces to ${url}/v1/traces`);
    expect(r.stderr).toContain('check the OTLP/HTTP URL');
  });
});

describe('an OTLP endpoint that goes down, comes back and goes down again', () => {
  it('is reported once per outage: quiet while it stays down, again after it recovered and failed anew', async () => {
    const port = await freePort();
    const errors: TelemetryExportError[] = [];
    const otlp = createOtlpTelemetry({
      url: `http://127.0.0.1:${port}`,
      serviceName: 'jukebox-outage-test',
      onError: (e) => errors.push(e),
      timeoutMillis: 2_000,
    });
    const tracer = otlp.tracerProvider.getTracer('outage-test');
    const emit = async (name: string) => {
      tracer.startSpan(name).end();
      await otlp.flush();
    };
    try {
      await emit('while-down-1');
      await emit('while-down-2');
      expect(errors).toHaveLength(1);

      const jaeger = await startJaeger({ otlpHttpPort: port });
      try {
        await emit('while-up');
        expect(errors).toHaveLength(1);
        // Jaeger batches before storing: poll until the span shows.
        let names: string[] = [];
        for (let i = 0; i < 50 && !names.includes('while-up'); i++) {
          await new Promise((r) => setTimeout(r, 200));
          const traces = await jaegerTraces(jaeger.queryUrl, 'jukebox-outage-test');
          names = traces.flatMap((t) => t.spans.map((s) => s.operationName));
        }
        expect(names).toContain('while-up');
      } finally {
        await jaeger.stop();
      }

      await emit('down-again-1');
      await emit('down-again-2');
      expect(errors).toHaveLength(2);
      expect(errors.every((e) => e.signal === 'traces')).toBe(true);
    } finally {
      await otlp.shutdown();
    }
  });
});
