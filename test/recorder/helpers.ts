import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LlmResponse } from '../../src/llm/types';
import { type RunIdentity, TapeRecorder, type TapeRecorderOptions } from '../../src/recorder';

export function tempDir(prefix = 'jbx-rec-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const RUN: RunIdentity = {
  workflowId: 'wf-test',
  runId: 'run-0001',
  workflowType: 'researchAgent',
  taskQueue: 'test-queue',
  agentCodeHash: `blake3:${'cd'.repeat(32)}`,
};

/** The slice of Temporal's activity Info the recorder reads. */
export function activityInfo(
  activityId: string,
  attempt = 1,
  activityType = 'llmStep',
  run: RunIdentity = RUN,
) {
  return {
    workflowExecution: { workflowId: run.workflowId, runId: run.runId },
    workflowType: run.workflowType,
    taskQueue: run.taskQueue,
    activityId,
    attempt,
    activityType,
  };
}

export function recorder(dir: string, options: TapeRecorderOptions = {}): TapeRecorder {
  return new TapeRecorder({ dir, agentCodeHash: RUN.agentCodeHash, fsync: 'none', ...options });
}

export function response(text: string, toolCalls: LlmResponse['toolCalls'] = []): LlmResponse {
  return {
    id: 'resp-1',
    provider: 'openai',
    model: 'gpt-4o-mini',
    text,
    toolCalls,
    finishReason: toolCalls.length ? 'tool_calls' : 'stop',
    usage: { inputTokens: 12, outputTokens: 5 },
    chunks: 2,
  };
}

/** Records one complete llm step the way the interceptor and llmStep do. */
export async function recordLlmStep(
  rec: TapeRecorder,
  step: number,
  request: Parameters<import('../../src/recorder').ActivityTape['llmRequest']>[0],
  reply: LlmResponse,
) {
  const tape = rec.forActivity(activityInfo(`a${step}`), step);
  tape.start({ step, request }, []);
  await tape.llmRequest(request);
  tape.llmChunk({ index: 0, offsetMs: 3, text: reply.text.slice(0, 4), raw: {} });
  tape.llmChunk({ index: 1, offsetMs: 7, text: reply.text.slice(4), raw: {} });
  tape.llmResponse(reply);
  await tape.complete(reply);
}
