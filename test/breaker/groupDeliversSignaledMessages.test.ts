import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localEndpoints } from '../../src/llm';
import { breakerStatus, startAgentGroup } from '../../src/temporal';
import { groupMessageSignal } from '../../src/temporal/workflow/agentGroupWorkflow';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker } from '../support/temporal';

describe('agents of a group exchange messages, and outsiders reach them by signal', () => {
  let model: ModelServer;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    model = await startModelServer({
      script: {
        turns: [
          // Slow enough (20 chunks, 50 ms apart) for the signal to arrive while the planner is still talking.
          {
            id: 'planner',
            match: { lastUser: 'Plan the release' },
            reply: { text: 'Worker, please prepare the release checklist.', chunkSize: 2, chunkDelayMs: 50 },
          },
          {
            id: 'worker',
            match: { lastUser: 'human: ship it on Friday' },
            reply: { text: 'Checklist ready, shipping Friday. DONE' },
          },
        ],
      },
    });
    env = await connectTestWorker({ endpoints: localEndpoints(model.url), tools: [] });
  });
  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  it('delivers a reply to the next track and a signaled message before that track’s turn', async () => {
    const handle = await startAgentGroup(
      {
        tracks: [
          { name: 'planner', provider: 'openai', model: 'gpt-4o-mini' },
          { name: 'worker', provider: 'anthropic', model: 'claude-haiku-4-5' },
        ],
        opening: 'Plan the release.',
        maxTurns: 6,
        breaker: { capUsd: 0.5 },
      },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
    );
    // Sent while the planner's reply streams: it lands after that reply in the worker's conversation.
    while (model.servedTurns().length === 0) await new Promise((r) => setTimeout(r, 20));
    await handle.signal(groupMessageSignal, { to: 'worker', from: 'human', text: 'ship it on Friday' });
    const result = await handle.result();
    expect(result.transcript).toEqual([
      { from: 'planner', to: 'worker', text: 'Worker, please prepare the release checklist.', toolCalls: [] },
      { from: 'worker', to: 'planner', text: 'Checklist ready, shipping Friday. DONE', toolCalls: [] },
    ]);
    expect(model.servedTurns().map((t) => `${t.turnId}:${t.provider}`)).toEqual([
      'planner:openai',
      'worker:anthropic',
    ]);
    // Each track's spend is priced by its own model: both are non-zero and differ.
    const status = await breakerStatus(handle);
    expect(status.tracks.map((t) => t.track)).toEqual(['planner', 'worker']);
    expect(status.tracks.every((t) => t.spentUsd > 0)).toBe(true);
    expect(status.open).toBe(false);
  });
});
