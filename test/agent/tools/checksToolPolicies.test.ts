import { describe, expect, it } from 'vitest';
import {
  mergeToolPolicies,
  type ToolDefinition,
  ToolPolicyError,
  ToolRegistry,
  toolPolicyOf,
} from '../../../src/agent/tools';

const tool = (policy: Record<string, unknown>): ToolDefinition => ({
  spec: { name: 'build', description: 'builds', parameters: { type: 'object', properties: {} } },
  run: async () => 'built',
  ...policy,
});

describe("a tool's timeout and retry policy", () => {
  it('keeps only what it sets, checked', () => {
    expect(toolPolicyOf({}, 'x')).toBeUndefined();
    expect(toolPolicyOf({ timeoutMs: 600_000 }, 'x')).toEqual({ timeoutMs: 600_000 });
    const retry = {
      maximumAttempts: 1,
      initialIntervalMs: 500,
      backoffCoefficient: 1.5,
      maximumIntervalMs: 10_000,
      nonRetryableErrorTypes: ['QuotaError'],
      retryTimeouts: true,
    };
    expect(toolPolicyOf({ retry }, 'x')).toEqual({ retry });
    // A copy: the caller's later edits do not reach the policy.
    expect(toolPolicyOf({ retry }, 'x')?.retry?.nonRetryableErrorTypes).not.toBe(
      retry.nonRetryableErrorTypes,
    );
  });

  it.each([
    [{ timeoutMs: 0 }, 'timeoutMs must be a number of milliseconds >= 1 (got 0)'],
    [{ timeoutMs: '10m' }, 'timeoutMs must be a number of milliseconds >= 1 (got "10m")'],
    [{ retry: 3 }, 'retry must be an object (got 3)'],
    [{ retry: { attempts: 3 } }, 'retry.attempts is not a known key (known: maximumAttempts, '],
    [{ retry: { maximumAttempts: 0 } }, 'retry.maximumAttempts must be an integer >= 1 (got 0)'],
    [{ retry: { maximumAttempts: 2.5 } }, 'retry.maximumAttempts must be an integer >= 1 (got 2.5)'],
    [{ retry: { backoffCoefficient: 0.5 } }, 'retry.backoffCoefficient must be a number >= 1 (got 0.5)'],
    [
      { retry: { nonRetryableErrorTypes: ['A', ''] } },
      'retry.nonRetryableErrorTypes must be a list of non-empty strings',
    ],
    [{ retry: { retryTimeouts: 'yes' } }, 'retry.retryTimeouts must be true or false (got "yes")'],
    [
      { retry: { initialIntervalMs: 5_000, maximumIntervalMs: 1_000 } },
      'retry.maximumIntervalMs must not be shorter than retry.initialIntervalMs (5000)',
    ],
  ])('refuses %j: %s', (policy, message) => {
    let err: unknown;
    try {
      toolPolicyOf(policy, 'tool "build"');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ToolPolicyError);
    expect((err as ToolPolicyError).code).toBe('TOOL_POLICY_INVALID');
    expect((err as ToolPolicyError).nonRetryable).toBe(true);
    expect((err as Error).message).toContain(`tool "build": ${message}`);
  });

  it('is checked when the tool is registered, so a worker with a bad one does not start', () => {
    expect(() => new ToolRegistry([tool({ timeoutMs: -1 })])).toThrow(ToolPolicyError);
    expect(
      new ToolRegistry([
        tool({ timeoutMs: 60_000 }),
        { ...tool({}), spec: { ...tool({}).spec, name: 'plain' } },
      ]).policies(),
    ).toEqual({
      build: { timeoutMs: 60_000 },
    });
  });

  it("lets a call's fields win over the definition's, retry fields one by one", () => {
    expect(
      mergeToolPolicies(
        { timeoutMs: 60_000, retry: { maximumAttempts: 1, retryTimeouts: true } },
        { retry: { maximumAttempts: 3 } },
      ),
    ).toEqual({ timeoutMs: 60_000, retry: { maximumAttempts: 3, retryTimeouts: true } });
    expect(mergeToolPolicies(undefined, { timeoutMs: 5 })).toEqual({ timeoutMs: 5 });
    expect(mergeToolPolicies(undefined, undefined)).toEqual({});
  });
});
