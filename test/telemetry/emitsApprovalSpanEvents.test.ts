/**
 * A decision on a worker with telemetry on: the approvalDecided activity's live span carries the
 * `jukebox.approval` event (who, the note, how it came, the outcome), under the run's invoke_agent span.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculateTool } from '../../examples/sample/tools';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { localEndpoints } from '../../src/llm';
import {
  approve,
  bundleTracedWorkflows,
  createJukeboxWorker,
  startAgent,
  waitForApproval,
} from '../../src/temporal';
import type {
  ApprovalScenario,
  ApprovalScenarioResult,
} from '../temporal/workflow/fixtures/approvalWorkflows';

describe('a decision on a worker with telemetry', () => {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider();
  tracerProvider.addSpanProcessor(new SimpleSpanProcessor(exporter));
  const config = temporalConfigFromEnv();
  const taskQueue = `approval-spans-${Date.now().toString(36)}`;
  let env: TestWorkflowEnvironment;
  let running: Promise<void>;
  let shutdown: () => void;

  beforeAll(async () => {
    env = await TestWorkflowEnvironment.createFromExistingServer({
      address: config.address,
      namespace: config.namespace,
    });
    const worker = await createJukeboxWorker({
      connection: env.nativeConnection,
      namespace: config.namespace,
      taskQueue,
      // No model step runs: the agent only calls a tool.
      endpoints: localEndpoints('http://127.0.0.1:9'),
      tools: [calculateTool],
      workflowBundle: await bundleTracedWorkflows(path.join(__dirname, 'fixtures/approvalWorkflows.ts')),
      tape: { dir: mkdtempSync(path.join(os.tmpdir(), 'jbx-approval-spans-')) },
      telemetry: { tracerProvider },
    });
    running = worker.run();
    shutdown = () => worker.shutdown();
  });

  afterAll(async () => {
    shutdown?.();
    await running;
    await env?.teardown();
  });

  async function spansOf(workflowId: string): Promise<ReadableSpan[]> {
    // Workflow spans leave the sandbox through a sink after the workflow task completes, a moment after the result.
    for (let i = 0; i < 100; i++) {
      const spans = exporter.getFinishedSpans();
      const agent = spans.find(
        (s) =>
          s.name === 'invoke_agent approvalToolsAgent' &&
          s.attributes['gen_ai.conversation.id'] === workflowId,
      );
      if (agent) return spans.filter((s) => s.spanContext().traceId === agent.spanContext().traceId);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no invoke_agent span for ${workflowId}`);
  }

  it('puts who decided, the note and the outcome on the approvalDecided activity span', async () => {
    const handle = await startAgent<ApprovalScenario, ApprovalScenarioResult>(
      'approvalToolsAgent',
      { calls: [{ tool: 'calculate', args: { expression: '6*7' }, approval: { reason: 'check the sum' } }] },
      { connection: env.connection as Connection, namespace: config.namespace, taskQueue, breaker: false },
    );
    const pending = await waitForApproval(handle);
    await approve(handle, { by: 'auditor', note: 'the sum is fine' });
    expect((await handle.result()).output.results).toEqual([{ output: '42' }]);

    const spans = await spansOf(handle.workflowId);
    const decided = spans.filter((s) => s.name === 'RunActivity:approvalDecided');
    expect(decided).toHaveLength(1);
    expect(decided[0]!.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'jukebox.approval',
        {
          'jukebox.approval.id': pending.id,
          'jukebox.approval.outcome': 'approved',
          'jukebox.approval.by': 'auditor',
          'jukebox.approval.via': 'update',
          'jukebox.approval.note': 'the sum is fine',
        },
      ],
    ]);
    // Within the run's trace, under its agent span like every step.
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const start = byId.get(decided[0]!.parentSpanId ?? '');
    expect(start?.name).toBe('StartActivity:approvalDecided');
    expect(byId.get(start?.parentSpanId ?? '')?.name).toBe('invoke_agent approvalToolsAgent');
  });
});
