import { describe, expect, it } from 'vitest';
import { evaluateArithmetic } from '../../examples/sample/tools';
import { ToolArgumentsError } from '../../src/agent/tools';

describe('the sample calculate tool', () => {
  it('respects precedence and parentheses', () => {
    expect(evaluateArithmetic('384400 / 40075')).toBeCloseTo(9.592, 3);
    expect(evaluateArithmetic('2 + 3 * (4 - 1)')).toBe(11);
    expect(evaluateArithmetic('-2 * -3')).toBe(6);
  });

  it('refuses anything that is not arithmetic instead of evaluating it', () => {
    expect(() => evaluateArithmetic('process.exit(1)')).toThrow(ToolArgumentsError);
    expect(() => evaluateArithmetic('(1 + 2')).toThrow(/missing \)/);
  });
});
