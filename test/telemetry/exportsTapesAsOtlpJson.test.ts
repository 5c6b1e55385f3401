import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTape } from '../../src/recorder/tape';
import { GENAI_SCHEMA_URL, TOKEN_USAGE_BUCKETS } from '../../src/telemetry';
import { jbx } from './cli';
import { type AgentTape, SECRET, STEP_US, writeAgentTape } from './fixtures/agentTape';

interface KV {
  key: string;
  value: Record<string, unknown>;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KV[];
  status: { code: number; message?: string };
}

const attrs = (kvs: KV[]) =>
  Object.fromEntries(
    kvs.map(({ key, value }) => {
      if ('stringValue' in value) return [key, value.stringValue];
      if ('intValue' in value) return [key, Number(value.intValue)];
      if ('doubleValue' in value) return [key, value.doubleValue];
      if ('boolValue' in value) return [key, value.boolValue];
      const arr = (value.arrayValue as { values: { stringValue: string }[] }).values;
      return [key, arr.map((v) => v.stringValue)];
    }),
  );

function spansOf(stdout: string): OtlpSpan[] {
  const req = JSON.parse(stdout) as {
    resourceSpans: {
      resource: { attributes: KV[] };
      scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[];
    }[];
  };
  expect(req.resourceSpans).toHaveLength(1);
  expect(req.resourceSpans[0]!.scopeSpans).toHaveLength(1);
  return req.resourceSpans[0]!.scopeSpans[0]!.spans;
}

describe('jbx export --format otlp-json', () => {
  let dir: string;
  let tape: AgentTape;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-telemetry-'));
    tape = await writeAgentTape(dir, { steps: 3, failFirstAttemptOf: 1 });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints an ExportTraceServiceRequest: invoke_agent root, a chat span per model attempt, execute_tool per tool call', () => {
    const r = jbx('export', tape.file, '--format', 'otlp-json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const req = JSON.parse(r.stdout);
    expect(attrs(req.resourceSpans[0].resource.attributes)).toMatchObject({
      'service.name': 'jukebox',
      'jukebox.tape_id': 'wf-telemetry/run-telemetry',
    });
    expect(req.resourceSpans[0].scopeSpans[0].scope.name).toBe('jukebox');
    expect(req.resourceSpans[0].scopeSpans[0].schemaUrl).toBe(GENAI_SCHEMA_URL);

    const spans = spansOf(r.stdout);
    expect(spans.map((s) => s.name)).toEqual([
      'invoke_agent researchAgent',
      'chat gpt-4o-mini',
      'execute_tool calculate',
      'chat gpt-4o-mini', // attempt 1 of step 2, failed
      'chat gpt-4o-mini', // its retry
      'execute_tool calculate',
      'chat gpt-4o-mini',
    ]);
    const [root, ...children] = spans;
    expect(root!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root!.parentSpanId).toBeUndefined();
    for (const s of spans) {
      expect(s.traceId).toBe(root!.traceId);
      expect(s.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(s.startTimeUnixNano).toMatch(/^\d+$/);
      expect(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano)).toBe(true);
    }
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
    for (const c of children) expect(c.parentSpanId).toBe(root!.spanId);
    // SPAN_KIND_CLIENT for model calls, INTERNAL for tools and the agent.
    expect(spans.map((s) => s.kind)).toEqual([1, 3, 1, 3, 3, 1, 3]);

    const chat = attrs(children[0]!.attributes);
    expect(chat).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.max_tokens': 256,
      'gen_ai.response.id': 'chatcmpl-0',
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 3,
      'jukebox.step': 0,
      'jukebox.attempt': 1,
    });
    expect(attrs(children[6 - 1]!.attributes)['gen_ai.response.finish_reasons']).toEqual(['stop']);
    // Content is opt-in.
    expect(chat['gen_ai.input.messages']).toBeUndefined();
    expect(r.stdout).not.toContain('6 x 7');

    const failed = children[2]!;
    expect(failed.status).toEqual({ code: 2, message: 'model server answered 503' });
    expect(attrs(failed.attributes)).toMatchObject({ 'error.type': 'LLM_UNAVAILABLE', 'jukebox.attempt': 1 });
    expect(attrs(children[3]!.attributes)).toMatchObject({
      'jukebox.attempt': 2,
      'gen_ai.response.id': 'chatcmpl-1',
    });
    expect(children[3]!.status.code).toBe(1);

    const tool = attrs(children[1]!.attributes);
    expect(tool).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'calculate',
      'gen_ai.tool.type': 'function',
    });
    expect(attrs(root!.attributes)).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'researchAgent',
      'gen_ai.usage.input_tokens': tape.inputTokens,
      'gen_ai.usage.output_tokens': tape.outputTokens,
    });
    expect(root!.status.code).toBe(1);
  });

  it("times every span by its frames' recordedAt", () => {
    const spans = spansOf(jbx('export', tape.file, '--format', 'otlp-json').stdout);
    const t = readTape(tape.file);
    const us = (ns: string) => Number(BigInt(ns) / 1000n);
    const requests = t.frames.filter((f) => f.kind === 'llm.request');
    const responses = t.frames.filter((f) => f.kind === 'llm.response');
    const chats = spans.filter((s) => s.name.startsWith('chat '));
    expect(chats.map((s) => us(s.startTimeUnixNano))).toEqual(requests.map((f) => f.recordedAtUs));
    const completed = chats.filter((s) => s.status.code === 1);
    expect(completed.map((s) => us(s.endTimeUnixNano))).toEqual(responses.map((f) => f.recordedAtUs));
    const all = t.frames.map((f) => f.recordedAtUs);
    expect(us(spans[0]!.startTimeUnixNano)).toBe(Math.min(...all, t.header.createdAtMs * 1000));
    expect(us(spans[0]!.endTimeUnixNano)).toBe(Math.max(...all));
    expect(us(chats[0]!.endTimeUnixNano) - us(chats[0]!.startTimeUnixNano)).toBeGreaterThanOrEqual(STEP_US);
  });

  it('is deterministic: the same tape exports the same ids and bytes', () => {
    expect(jbx('export', tape.file, '--format', 'otlp-json').stdout).toBe(
      jbx('export', tape.file, '--format', 'otlp-json').stdout,
    );
  });

  it('with --capture-content carries the conversation as gen_ai messages, secrets redacted', () => {
    const r = jbx('export', tape.file, '--format', 'otlp-json', '--capture-content');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(SECRET);
    const spans = spansOf(r.stdout);
    const last = attrs(spans[spans.length - 1]!.attributes);
    const input = JSON.parse(last['gen_ai.input.messages'] as string);
    expect(input[0]).toEqual({
      role: 'user',
      parts: [{ type: 'text', content: 'What is 6 x 7? my key is [REDACTED]' }],
    });
    expect(input[1]).toEqual({
      role: 'assistant',
      parts: [{ type: 'tool_call', id: 'call-0', name: 'calculate', arguments: { expression: '6 * 7' } }],
    });
    expect(input[2]).toEqual({
      role: 'tool',
      parts: [{ type: 'tool_call_response', id: 'call-0', response: '42' }],
    });
    expect(JSON.parse(last['gen_ai.output.messages'] as string)).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'It is 42.' }], finish_reason: 'stop' },
    ]);
    expect(JSON.parse(last['gen_ai.system_instructions'] as string)).toEqual([
      { type: 'text', content: 'You are terse.' },
    ]);
    const tool = attrs(spans[2]!.attributes);
    expect(JSON.parse(tool['gen_ai.tool.call.arguments'] as string)).toEqual({ expression: '6 * 7' });
    expect(JSON.parse(tool['gen_ai.tool.call.result'] as string)).toBe(42);
  });

  it('--signal metrics prints an ExportMetricsServiceRequest with the two client histograms', () => {
    const r = jbx('export', tape.file, '--format', 'otlp-json', '--signal', 'metrics');
    expect(r.code).toBe(0);
    const req = JSON.parse(r.stdout);
    const metrics = req.resourceMetrics[0].scopeMetrics[0].metrics as {
      name: string;
      unit: string;
      histogram: {
        aggregationTemporality: number;
        dataPoints: {
          attributes: KV[];
          count: string;
          sum: number;
          bucketCounts: string[];
          explicitBounds: number[];
        }[];
      };
    }[];
    expect(metrics.map((m) => [m.name, m.unit])).toEqual([
      ['gen_ai.client.token.usage', '{token}'],
      ['gen_ai.client.operation.duration', 's'],
    ]);
    const [tokens, duration] = metrics;
    expect(tokens!.histogram.aggregationTemporality).toBe(2);
    const byType = Object.fromEntries(
      tokens!.histogram.dataPoints.map((p) => [attrs(p.attributes)['gen_ai.token.type'], p]),
    );
    expect(byType.input!.sum).toBe(tape.inputTokens);
    expect(byType.output!.sum).toBe(tape.outputTokens);
    expect(byType.input!.count).toBe('3');
    expect(byType.input!.explicitBounds).toEqual(TOKEN_USAGE_BUCKETS);
    expect(attrs(byType.input!.attributes)).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'gen_ai.token.type': 'input',
    });
    for (const p of [...tokens!.histogram.dataPoints, ...duration!.histogram.dataPoints])
      expect(p.bucketCounts.reduce((a, b) => a + Number(b), 0)).toBe(Number(p.count));
    // Duration: the three completed calls and the failed attempt, which carries its error.type.
    const durations = duration!.histogram.dataPoints;
    expect(durations.reduce((n, p) => n + Number(p.count), 0)).toBe(4);
    expect(durations.some((p) => attrs(p.attributes)['error.type'] === 'LLM_UNAVAILABLE')).toBe(true);
  });

  it('rejects bad arguments with exit 2 and says what to pass', () => {
    const none = jbx('export', tape.file);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--otlp URL or --format otlp-json');
    expect(jbx('export', tape.file, '--format', 'zipkin').stderr).toContain('the one format is otlp-json');
    expect(jbx('export', tape.file, '--format', 'otlp-json', '--signal', 'logs').code).toBe(2);
    const badUrl = jbx('export', tape.file, '--otlp', 'ftp://collector:4318');
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('OTLP/HTTP needs http: or https:');
    expect(jbx('export', path.join(dir, 'missing.jbx'), '--format', 'otlp-json').code).toBe(2);
  });

  it('exports what verified from a damaged tape, then exits 3', () => {
    const t = readTape(tape.file);
    const lastChat = t.frames.filter((f) => f.kind === 'llm.request').at(-1)!;
    const bytes = readFileSync(tape.file);
    bytes[lastChat.offset + 90]! ^= 0xff;
    const damaged = path.join(dir, 'damaged.jbx');
    writeFileSync(damaged, bytes);
    const r = jbx('export', damaged, '--format', 'otlp-json');
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('is damaged');
    const names = spansOf(r.stdout).map((s) => s.name);
    expect(names.filter((n) => n.startsWith('chat '))).toHaveLength(3);
  });
});
