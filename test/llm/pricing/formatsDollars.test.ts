import { describe, expect, it } from 'vitest';
import { formatUsd } from '../../../src/llm/pricing/formatUsd';

describe('formatUsd', () => {
  it('prints four significant digits below a cent, without the float tail of a sum of prices', () => {
    expect(0.00001 + 0.00000365).not.toBe(0.00001365); // the sum a tape's cost column carries
    expect(formatUsd(0.000013649999999999998)).toBe('0.00001365');
    expect(formatUsd((12 * 0.15 + 5 * 0.6) / 1e6)).toBe('0.0000048');
    expect(formatUsd(0.0012)).toBe('0.0012');
    expect(formatUsd(1e-9)).toBe('0.000000001');
  });

  it('prints four decimals from a cent up, and zero as zero dollars', () => {
    expect(formatUsd(0.51)).toBe('0.5100');
    expect(formatUsd(12.345678)).toBe('12.3457');
    expect(formatUsd(0)).toBe('0.0000');
  });
});
