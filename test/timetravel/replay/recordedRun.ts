import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { researchTools } from '../../../examples/sample/tools';
import { localEndpoints } from '../../../src/llm';
import { captureRunHistory, startAgent } from '../../../src/temporal';
import { type ModelScript, type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { connectTestWorker } from '../../support/temporal';

/**
 * The sample agent's conversation as a script whose turns repeat and match on the last tool result (the first
 * request, with none, falls through to the last turn), so any step can be served again in any order: what a
 * fork needs, since it resumes mid-conversation against a freshly loaded script.
 */
export const SAMPLE_SCRIPT: ModelScript = {
  name: 'research-forkable',
  turns: [
    {
      id: 'look-up-earth',
      match: { toolResult: '384400' },
      reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'earth circumference km' } }] },
      repeat: true,
    },
    {
      id: 'divide',
      match: { toolResult: '40075' },
      reply: { toolCalls: [{ name: 'calculate', arguments: { expression: '384400 / 40075' } }] },
      repeat: true,
    },
    {
      id: 'answer',
      match: { toolResult: '9.59' },
      reply: {
        text: "The Moon is about 384,400 km away: roughly 9.6 trips around the Earth's equator (40,075 km).",
      },
      repeat: true,
    },
    {
      id: 'look-up-moon',
      reply: {
        text: 'I will look up the distance to the Moon first.',
        toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'moon distance km' } }],
      },
      repeat: true,
    },
  ],
};
export const QUESTION = 'How many times around the Earth is the distance to the Moon?';

/** A model server, a worker recording into a temp folder, and a helper that runs an agent and keeps its history. */
export async function recordingSetup(
  script: Parameters<typeof startModelServer>[0]['script'] = SAMPLE_SCRIPT,
) {
  const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jbx-time-travel-'));
  const model: ModelServer = await startModelServer({ script });
  const env = await connectTestWorker({
    endpoints: localEndpoints(model.url),
    tools: researchTools,
    tape: { dir: tapeDir },
  });
  return {
    tapeDir,
    model,
    env,
    /** Runs to the end (completed or failed), stores the history beside the tape, returns the tape path. */
    async record(input: Record<string, unknown>, workflowType = 'researchAgent') {
      const handle = await startAgent(workflowType, input, {
        connection: env.connection,
        namespace: env.namespace,
        taskQueue: env.taskQueue,
        runOptions: { maximumAttempts: 1 },
      });
      const result = await handle.result().catch((e: unknown) => e);
      const { tapeFile } = await captureRunHistory(handle, tapeDir);
      return { tapeFile, result, handle };
    },
    async close() {
      await env.close();
      await model.close().catch(() => {});
    },
  };
}
