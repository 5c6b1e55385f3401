import type { ActivityExecuteInput } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { AfterStepInterceptor, afterStep } from '../../../src/temporal/worker/afterStep';

const input = { args: [], headers: {} } as unknown as ActivityExecuteInput;

describe('afterStep', () => {
  it('starts work registered inside a step only after the step (and every inner interceptor) returned', async () => {
    const events: string[] = [];
    const result = await new AfterStepInterceptor().execute(input, async () => {
      afterStep(() => events.push('deferred work'));
      // The step's own tail, e.g. the tape's closing fsync, spanning several turns of the event loop.
      await new Promise((r) => setTimeout(r, 5));
      events.push('step returned');
      return 'result';
    });
    events.push('interceptor returned');
    expect(result).toBe('result');
    expect(events).toEqual(['step returned', 'interceptor returned']);
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['step returned', 'interceptor returned', 'deferred work']);
  });

  it('starts it after a failed step too, and outside any step on the next turn of the event loop', async () => {
    const events: string[] = [];
    const failed = await new AfterStepInterceptor()
      .execute(input, async () => {
        afterStep(() => events.push('after the failure'));
        throw new Error('tool failed');
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe('tool failed');
    afterStep(() => events.push('outside a step'));
    expect(events).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['after the failure', 'outside a step']);
  });
});
