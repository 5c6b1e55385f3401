import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ResearchOutput } from '../../examples/sample/agent';
import {
  type JaegerServer,
  type JaegerSpan,
  type JaegerTrace,
  jaegerTags,
  jaegerTrace,
  jaegerTraces,
  startJaeger,
} from '../../servers/jaeger';
import type { AgentRunResult } from '../../src/agent/context';
import { TapeStore } from '../../src/recorder';
import { readTape } from '../../src/recorder/tape';
import { createOtlpTelemetry, type OtlpTelemetry, type TelemetryExportError } from '../../src/telemetry';
import { type ModelScript, type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { jbx } from './cli';
import { startTelemetryWorker } from './telemetryWorker';

const SAMPLE_SCRIPT = path.join(__dirname, '../../examples/sample/script.yaml');
const QUESTION = 'How many times around the Earth is the distance to the Moon?';

/** What each of the sample's four model turns reports it used, in the order the run asks for them. */
const USAGE = [
  { input: 212, output: 31 },
  { input: 263, output: 18 },
  { input: 301, output: 22 },
  { input: 340, output: 45 },
];

/** The sample agent's script with those token counts scripted, so every span can be checked against them. */
function scriptedUsage(): ModelScript {
  const script = parse(readFileSync(SAMPLE_SCRIPT, 'utf8')) as ModelScript;
  script.turns.forEach((t, i) => {
    t.reply.usage = USAGE[i]!;
  });
  return script;
}

const tokens = (s: JaegerSpan) => {
  const t = jaegerTags(s);
  return { input: t['gen_ai.usage.input_tokens'], output: t['gen_ai.usage.output_tokens'] };
};

async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 150; i++) {
    const found = await probe();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`Jaeger never showed ${what}`);
}

function tree(trace: JaegerTrace) {
  const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
  const parent = (s: JaegerSpan) =>
    byId.get(s.references.find((r) => r.refType === 'CHILD_OF')?.spanID ?? '');
  const named = (name: string) => trace.spans.filter((s) => s.operationName === name);
  return { parent, named };
}

describe('GenAI telemetry in a real Jaeger', () => {
  let jaeger: JaegerServer;
  let model: ModelServer;
  let otlp: OtlpTelemetry;
  let worker: Awaited<ReturnType<typeof startTelemetryWorker>>;
  const errors: TelemetryExportError[] = [];
  let run: { result: AgentRunResult<ResearchOutput>; workflowId: string; runId: string };

  beforeAll(async () => {
    jaeger = await startJaeger();
    model = await startModelServer({ script: scriptedUsage() });
    otlp = createOtlpTelemetry({
      url: jaeger.otlpUrl,
      serviceName: 'jukebox-live-test',
      onError: (e) => errors.push(e),
    });
    worker = await startTelemetryWorker(model.url, {
      tracerProvider: otlp.tracerProvider,
      meterProvider: otlp.meterProvider,
    });
    run = await worker.run<ResearchOutput>({ question: QUESTION });
  });
  afterAll(async () => {
    await worker?.close();
    await otlp?.shutdown();
    await model?.close();
    await jaeger?.stop();
  });

  it('receives the live run over OTLP: invoke_agent, chat and execute_tool spans under Temporal’s', async () => {
    expect(run.result.output.turns).toBe(4);
    const trace = await eventually('the live run', async () => {
      await otlp.flush();
      const traces = await jaegerTraces(jaeger.queryUrl, 'jukebox-live-test');
      return traces.find(
        (t) =>
          t.spans.some(
            (s) =>
              s.operationName === 'invoke_agent researchAgent' &&
              jaegerTags(s)['gen_ai.conversation.id'] === run.workflowId,
          ) && t.spans.filter((s) => s.operationName === 'chat gpt-4o-mini').length === 4,
      );
    });
    const { parent, named } = tree(trace);
    const [agent] = named('invoke_agent researchAgent');
    expect(parent(agent!)!.operationName).toBe('RunWorkflow:researchAgent');
    for (const chat of named('chat gpt-4o-mini')) {
      const tags = jaegerTags(chat);
      expect(tags).toMatchObject({
        'span.kind': 'client',
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini',
      });
      expect(parent(chat)!.operationName).toBe('RunActivity:llmStep');
      expect(parent(parent(parent(chat)!)!)).toBe(agent);
    }
    // Each model call carries the token counts its turn reported, in order.
    const chats = named('chat gpt-4o-mini').sort((a, b) => a.startTime - b.startTime);
    expect(chats.map(tokens)).toEqual(USAGE);
    expect(named('execute_tool lookup_fact')).toHaveLength(2);
    expect(jaegerTags(named('execute_tool calculate')[0]!)['gen_ai.tool.name']).toBe('calculate');
    // Traces reached Jaeger, so no trace export failed.
    expect(errors.filter((e) => e.signal === 'traces')).toEqual([]);
  });

  it('receives the same run exported from its tape by jbx export --otlp, timed by the tape', async () => {
    const file = new TapeStore({ dir: worker.tapeDir }).pathFor(run.workflowId, run.runId);
    const r = jbx('export', file, '--otlp', jaeger.otlpUrl, '--service', 'jukebox-export-test', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as {
      traceId: string;
      spans: number;
      results: { status: number; rejected: number }[];
    };
    expect(out.spans).toBe(8);
    expect(out.results).toEqual([expect.objectContaining({ signal: 'traces', status: 200, rejected: 0 })]);

    const trace = await eventually('the exported trace', async () => {
      const t = await jaegerTrace(jaeger.queryUrl, out.traceId);
      return t && t.spans.length === 8 ? t : undefined;
    });
    expect(Object.values(trace.processes).map((p) => p.serviceName)).toEqual(['jukebox-export-test']);
    const { parent, named } = tree(trace);
    const [agent] = named('invoke_agent researchAgent');
    expect(jaegerTags(agent!)).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'researchAgent',
      'gen_ai.agent.id': `${run.workflowId}/${run.runId}`,
      'gen_ai.usage.input_tokens': 212 + 263 + 301 + 340,
    });
    const chats = named('chat gpt-4o-mini').sort((a, b) => a.startTime - b.startTime);
    expect(chats).toHaveLength(4);
    expect(named('execute_tool lookup_fact')).toHaveLength(2);
    expect(named('execute_tool calculate')).toHaveLength(1);
    for (const s of [...chats, ...named('execute_tool lookup_fact')]) expect(parent(s)).toBe(agent);

    const tape = readTape(file);
    const requests = tape.frames.filter((f) => f.kind === 'llm.request');
    const responses = tape.frames.filter((f) => f.kind === 'llm.response');
    expect(chats.map((s) => s.startTime)).toEqual(requests.map((f) => f.recordedAtUs));
    expect(chats.map((s) => s.startTime + s.duration)).toEqual(responses.map((f) => f.recordedAtUs));
    expect(chats.map(tokens)).toEqual(USAGE);
    chats.forEach((chat, i) => {
      expect(jaegerTags(chat)).toMatchObject({
        'span.kind': 'client',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.finish_reasons': JSON.stringify([i === 3 ? 'stop' : 'tool_calls']),
      });
      expect(jaegerTags(chat)['gen_ai.response.id']).toMatch(/\S/);
    });
  });

  it('says so when the collector takes no metrics (Jaeger has a traces pipeline only): exit 1, one message', () => {
    const file = new TapeStore({ dir: worker.tapeDir }).pathFor(run.workflowId, run.runId);
    const r = jbx('export', file, '--otlp', jaeger.otlpUrl, '--signal', 'all');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`could not export metrics to ${jaeger.otlpUrl}/v1/metrics: HTTP 404`);
    expect(r.stderr).toContain('no OTLP/HTTP receiver for metrics');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
