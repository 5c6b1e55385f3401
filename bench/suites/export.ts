/**
 * `jbx export` cost: turning a recorded 1,000-step run (500 model calls, 500 tool calls, the conversation
 * growing to 1,000 messages) into OTLP JSON, against reading the tape alone and against the usual route of
 * building the same spans with the OpenTelemetry SDK and serializing them with its OTLP JSON serializer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { LlmRequest, LlmResponse } from '../../src/llm/types';
import { Redactor, TapeRecorder } from '../../src/recorder';
import { readTape } from '../../src/recorder/tape';
import { exportTape, tapeTelemetry } from '../../src/telemetry';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';

const STEPS = 1_000;
const RUNS = 7;

async function writeTape(dir: string): Promise<string> {
  const recorder = new TapeRecorder({ dir, fsync: 'none', agentCodeHash: 'bench' });
  const run = {
    workflowExecution: { workflowId: 'bench-export', runId: 'r1' },
    workflowType: 'benchAgent',
    taskQueue: 'bench',
  };
  const messages: LlmRequest['messages'] = [
    { role: 'user', content: 'Count to five hundred, one tool call at a time.' },
  ];
  for (let step = 0; step < STEPS; step += 2) {
    const request: LlmRequest = {
      provider: 'openai',
      model: 'gpt-4o-mini',
      temperature: 0,
      messages: [...messages],
    };
    const response: LlmResponse = {
      id: `chatcmpl-${step}`,
      provider: 'openai',
      model: 'gpt-4o-mini',
      text: `Step ${step}: calling the counter.`,
      toolCalls: [{ id: `call-${step}`, name: 'count', arguments: { n: step / 2 } }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 40 + step * 6, outputTokens: 18 },
      chunks: 3,
    };
    const llm = recorder.forActivity(
      { ...run, activityId: String(step + 1), attempt: 1, activityType: 'llmStep' },
      step,
    );
    llm.start({ step, request }, []);
    await llm.llmRequest(request);
    for (let c = 0; c < 3; c++) llm.llmChunk({ index: c, offsetMs: c * 4, text: `piece ${c} `, raw: {} });
    llm.llmResponse(response);
    await llm.complete(response);
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
    const tool = recorder.forActivity(
      { ...run, activityId: String(step + 2), attempt: 1, activityType: 'toolStep' },
      step + 1,
    );
    tool.start({ step: step + 1, name: 'count', args: { n: step / 2 } }, []);
    await tool.toolCall('count', { n: step / 2 });
    tool.toolResult(step / 2 + 1);
    await tool.complete(step / 2 + 1);
    messages.push({ role: 'tool', toolCallId: `call-${step}`, name: 'count', content: String(step / 2 + 1) });
  }
  const { path: file } = await recorder.recordOutcome(run, {
    step: STEPS,
    status: 'completed',
    result: 'done',
  });
  await recorder.close();
  return file;
}

function timeMs(fn: () => void): number {
  fn();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  return median(samples);
}

/** The peer route: the same spans as SDK span objects, serialized by the SDK's own OTLP JSON serializer. */
function sdkRoute(file: string): number {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider();
  provider.addSpanProcessor(new SimpleSpanProcessor(exporter));
  const tracer = provider.getTracer('jukebox');
  const t = tapeTelemetry(readTape(file), { redactor: new Redactor() });
  const [root, ...children] = t.spans;
  const rootSpan = tracer.startSpan(root!.name, {
    startTime: root!.startUs / 1000,
    attributes: root!.attributes,
  });
  const parent = trace.setSpan(ROOT_CONTEXT, rootSpan);
  for (const s of children) {
    const kind = s.kind === 'CLIENT' ? SpanKind.CLIENT : SpanKind.INTERNAL;
    tracer
      .startSpan(s.name, { kind, startTime: s.startUs / 1000, attributes: s.attributes }, parent)
      .end(s.endUs / 1000);
  }
  rootSpan.end(root!.endUs / 1000);
  const bytes = JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans());
  exporter.reset();
  return bytes?.byteLength ?? 0;
}

export const exportSuite: BenchSuite = {
  name: 'export',
  breaker: NO_AGENT_NOTE,
  async run(): Promise<BenchResult[]> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-export-'));
    try {
      const file = await writeTape(dir);
      // Cheapest first: the content export's garbage would slow whatever runs after it.
      const readMs = timeMs(() => readTape(file));
      let spans = 0;
      const exportMs = timeMs(() => {
        const e = exportTape(file);
        spans = e.telemetry.spans.length;
        JSON.stringify(e.traces);
        JSON.stringify(e.metrics);
      });
      const tracesOnlyMs = timeMs(() => JSON.stringify(exportTape(file).traces));
      const sdkMs = timeMs(() => sdkRoute(file));
      const contentMs = timeMs(() => JSON.stringify(exportTape(file, { captureContent: true }).traces));
      const note = `${spans} spans; tape of ${STEPS} steps`;
      return [
        result(
          'export 1,000-step tape → OTLP JSON (traces + metrics)',
          exportMs,
          'ms',
          'readTape alone (verify + decode)',
          readMs,
          note,
        ),
        result(
          'export 1,000-step tape → OTLP JSON traces',
          tracesOnlyMs,
          'ms',
          'same spans via OTel SDK + JsonTraceSerializer',
          sdkMs,
          note,
        ),
        result(
          'export 1,000-step tape with --capture-content',
          contentMs,
          'ms',
          'readTape alone (verify + decode)',
          readMs,
          `${note}; 1,000-message conversation resolved per request`,
        ),
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
