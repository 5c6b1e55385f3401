import { describe, expect, it } from 'vitest';
import { createOfflineContext, type Timeline, type TimelineStep } from '../../../src/timetravel/replay';

const step = (n: number, kind: 'llm' | 'tool'): TimelineStep =>
  ({
    step: n,
    kind,
    activityId: String(n + 1),
    attempts: 1,
    firstFrame: n * 10,
    lastFrame: n * 10 + 5,
    requestFrame: n * 10 + 1,
    chunks: [],
    cost: null,
    effects: [],
    ...(kind === 'tool'
      ? { toolName: 'lookup', args: { q: 'x' }, output: 'found' }
      : {
          request: { provider: 'openai', model: 'gpt-4o-mini', messages: [] },
          response: {
            id: 'r',
            provider: 'openai',
            model: 'gpt-4o-mini',
            text: 'hi',
            toolCalls: [],
            finishReason: 'stop',
            usage: { inputTokens: 1, outputTokens: 1 },
            chunks: 0,
          },
        }),
  }) as TimelineStep;

/** A run whose circuit breaker tripped after step 0 and was resumed: the trip took step number 1 for itself. */
function trippedTimeline(): Timeline {
  return {
    file: 'tripped.jbx',
    tape: { header: { workflowId: 'w', runId: 'r', workflowType: 'a', meta: {} }, frames: [] } as never,
    steps: [step(0, 'llm'), step(2, 'tool')],
    booth: [],
    approvals: [],
    workflowSteps: [1],
    observations: [],
    input: { present: true, value: {} },
    outcome: { status: 'completed', frame: 40, step: 3 },
  };
}

describe('offline replay of a run whose workflow took a step number for itself', () => {
  it("skips the breaker-trip step as the workflow did: the agent's next call is answered by step 2", async () => {
    const { ctx, state } = createOfflineContext(trippedTimeline());
    await ctx.llm({ provider: 'openai', model: 'gpt-4o-mini', messages: [] });
    expect(await ctx.tool('lookup', { q: 'x' })).toBe('found');
    expect(ctx.steps).toBe(3);
    expect(state).toMatchObject({ replayed: 2, divergence: null });
  });
});
