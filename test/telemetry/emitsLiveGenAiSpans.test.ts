import path from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import {
  AggregationTemporality,
  type HistogramMetricData,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../examples/sample/agent';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { startTelemetryWorker } from './telemetryWorker';

const SAMPLE_SCRIPT = path.join(__dirname, '../../examples/sample/script.yaml');
const FAKE_KEY = 'sk-test-LIVEFAKEKEY0123456789abcdef';
const QUESTION = `How many times around the Earth is the distance to the Moon? (my key is ${FAKE_KEY})`;

/** Lets the test read the meter provider's state on demand. */
class CollectingReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onShutdown() {}
  protected async onForceFlush() {}
}

function telemetryFixture() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider();
  tracerProvider.addSpanProcessor(new SimpleSpanProcessor(exporter));
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return { exporter, tracerProvider, reader, meterProvider };
}

async function spansOfRun(exporter: InMemorySpanExporter, workflowId: string): Promise<ReadableSpan[]> {
  // Workflow spans leave the sandbox through a sink after the workflow task completes, a moment after the result.
  for (let i = 0; i < 100; i++) {
    const spans = exporter.getFinishedSpans();
    const agent = spans.find(
      (s) => s.name === 'invoke_agent researchAgent' && s.attributes['gen_ai.conversation.id'] === workflowId,
    );
    if (agent) {
      const mine = spans.filter((s) => s.spanContext().traceId === agent.spanContext().traceId);
      if (mine.some((s) => s.name === 'RunWorkflow:researchAgent')) return mine;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `no invoke_agent span for ${workflowId}: ${exporter
      .getFinishedSpans()
      .map((s) => s.name)
      .join(', ')}`,
  );
}

describe('a run on a worker with telemetry', () => {
  let model: ModelServer;
  const withContent = telemetryFixture();
  const withoutContent = telemetryFixture();
  let workers: Awaited<ReturnType<typeof startTelemetryWorker>>[] = [];

  beforeAll(async () => {
    model = await startModelServer({ script: SAMPLE_SCRIPT });
    workers = [
      await startTelemetryWorker(model.url, { ...withContent, captureContent: true }),
      await startTelemetryWorker(model.url, withoutContent),
    ];
  });
  afterAll(async () => {
    for (const w of workers) await w.close();
    await model?.close();
  });

  it('emits invoke_agent, chat and execute_tool spans under Temporal’s own, with GenAI attributes', async () => {
    model.loadScript(SAMPLE_SCRIPT);
    const { result, workflowId, runId } = await workers[0]!.run<ResearchOutput>({
      question: QUESTION,
    });
    expect(result.output.turns).toBe(4);
    const spans = await spansOfRun(withContent.exporter, workflowId);
    const named = (name: string) => spans.filter((s) => s.name === name);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const parent = (s: ReadableSpan) => byId.get(s.parentSpanId ?? '');

    const [agent] = named('invoke_agent researchAgent');
    const [runWorkflow] = named('RunWorkflow:researchAgent');
    expect(agent).toBeDefined();
    expect(parent(agent!)).toBe(runWorkflow);
    expect(agent!.kind).toBe(SpanKind.INTERNAL);
    expect(agent!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'researchAgent',
      'gen_ai.agent.id': `${workflowId}/${runId}`,
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
    });

    const chats = named('chat gpt-4o-mini');
    const tools = [...named('execute_tool lookup_fact'), ...named('execute_tool calculate')];
    expect(chats).toHaveLength(4);
    expect(named('execute_tool lookup_fact')).toHaveLength(2);
    expect(named('execute_tool calculate')).toHaveLength(1);
    // chat → RunActivity (Temporal, worker side) → StartActivity (Temporal, workflow side) → invoke_agent.
    for (const s of [...chats, ...tools]) {
      const runActivity = parent(s)!;
      const type = s.name.startsWith('chat') ? 'llmStep' : 'toolStep';
      expect(runActivity.name).toBe(`RunActivity:${type}`);
      expect(parent(runActivity)!.name).toBe(`StartActivity:${type}`);
      expect(parent(parent(runActivity)!)).toBe(agent);
    }

    chats.sort((a, b) => (a.attributes['jukebox.step'] as number) - (b.attributes['jukebox.step'] as number));
    const steps = result.steps.filter((s) => s.kind === 'llm');
    chats.forEach((chat, i) => {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini',
        'gen_ai.response.finish_reasons': [i === 3 ? 'stop' : 'tool_calls'],
        'gen_ai.usage.input_tokens': steps[i]!.inputTokens,
        'gen_ai.usage.output_tokens': steps[i]!.outputTokens,
        'gen_ai.conversation.id': workflowId,
        'jukebox.attempt': 1,
      });
      expect(chat.attributes['gen_ai.response.id']).toMatch(/\S/);
    });
    const sum = (k: string) => chats.reduce((n, s) => n + (s.attributes[k] as number), 0);
    expect(agent!.attributes['gen_ai.usage.input_tokens']).toBe(sum('gen_ai.usage.input_tokens'));
    expect(agent!.attributes['gen_ai.usage.output_tokens']).toBe(sum('gen_ai.usage.output_tokens'));
    expect(tools[0]!.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.type': 'function',
    });

    // Content was opted in: present, and redacted.
    const first = JSON.parse(chats[0]!.attributes['gen_ai.input.messages'] as string);
    expect(first).toEqual([
      { role: 'user', parts: [{ type: 'text', content: QUESTION.replace(FAKE_KEY, '[REDACTED]') }] },
    ]);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(FAKE_KEY);
    const out = JSON.parse(chats[3]!.attributes['gen_ai.output.messages'] as string);
    expect(out[0]).toMatchObject({ role: 'assistant', finish_reason: 'stop' });
    expect(out[0].parts[0].content).toContain('384,400');
    expect(
      JSON.parse(named('execute_tool calculate')[0]!.attributes['gen_ai.tool.call.result'] as string),
    ).toMatch(/^9\.59/);

    // The metrics: one duration per model call, token sums by type equal to the spans'.
    const { resourceMetrics } = await withContent.reader.collect();
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics) as HistogramMetricData[];
    const tokenUsage = metrics.find((m) => m.descriptor.name === 'gen_ai.client.token.usage')!;
    const duration = metrics.find((m) => m.descriptor.name === 'gen_ai.client.operation.duration')!;
    expect(tokenUsage.descriptor.unit).toBe('{token}');
    expect(duration.descriptor.unit).toBe('s');
    const point = (type: string) =>
      tokenUsage.dataPoints.find((p) => p.attributes['gen_ai.token.type'] === type)!;
    expect(point('input').value.sum).toBe(sum('gen_ai.usage.input_tokens'));
    expect(point('output').value.sum).toBe(sum('gen_ai.usage.output_tokens'));
    expect(point('input').attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini',
      'gen_ai.token.type': 'input',
    });
    expect(duration.dataPoints.reduce((n, p) => n + p.value.count, 0)).toBe(4);
    expect(duration.dataPoints[0]!.value.sum).toBeGreaterThan(0);
  });

  it('leaves message content off unless opted in', async () => {
    model.loadScript(SAMPLE_SCRIPT);
    const { workflowId } = await workers[1]!.run<ResearchOutput>({ question: QUESTION });
    const spans = await spansOfRun(withoutContent.exporter, workflowId);
    const chats = spans.filter((s) => s.name === 'chat gpt-4o-mini');
    expect(chats).toHaveLength(4);
    for (const s of spans)
      for (const k of [
        'gen_ai.input.messages',
        'gen_ai.output.messages',
        'gen_ai.tool.call.arguments',
        'gen_ai.tool.call.result',
      ])
        expect(s.attributes[k]).toBeUndefined();
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('distance to the Moon');
  });
});
