/**
 * An approval's options as the run enforces them: the default deadline (a day, as docs/approvals.md states),
 * durations with units, 'rollback' unless told, and a typed error naming what to fix for an option that cannot be
 * enforced.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ApprovalOptionsError,
  DEFAULT_APPROVAL_TIMEOUT,
  resolveApprovalOptions,
  timeoutMs,
} from '../../src/agent';

const DOC = path.resolve(__dirname, '../../docs/approvals.md');

describe('approval options', () => {
  it('waits 24 hours and then rolls back when the asker says nothing, as the docs state', () => {
    expect(DEFAULT_APPROVAL_TIMEOUT).toBe('24h');
    expect(timeoutMs(undefined)).toBe(86_400_000);
    expect(resolveApprovalOptions(undefined)).toEqual({
      timeoutMs: 86_400_000,
      timeout: '1d',
      onTimeout: 'rollback',
    });
    expect(resolveApprovalOptions(true)).toEqual(resolveApprovalOptions({}));
    const doc = fs.readFileSync(DOC, 'utf8');
    expect(doc).toContain(
      "- `timeout`: milliseconds or `'90s'`, `'30m'`, `'24h'`, `'7d'`. **Default 24 hours** (`DEFAULT_APPROVAL_TIMEOUT`).",
    );
    expect(doc).toContain("- `onTimeout: 'rollback'` (default): like a rejection.");
  });

  it('reads milliseconds and durations with a unit', () => {
    expect(timeoutMs(1_500)).toBe(1_500);
    expect(timeoutMs('250ms')).toBe(250);
    expect(timeoutMs('90s')).toBe(90_000);
    expect(timeoutMs(' 30m ')).toBe(1_800_000);
    expect(timeoutMs('1.5h')).toBe(5_400_000);
    expect(timeoutMs('7d')).toBe(604_800_000);
    expect(resolveApprovalOptions({ timeout: 90_000, onTimeout: 'refuse', deciders: ['reviewer'] })).toEqual({
      timeoutMs: 90_000,
      timeout: '90s',
      onTimeout: 'refuse',
      deciders: ['reviewer'],
    });
  });

  it('refuses what it cannot enforce with a typed, non-retryable error that says what to give', () => {
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, '', 'soon', '10 years', '5w']) {
      const err = (() => {
        try {
          timeoutMs(bad);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err, String(bad)).toBeInstanceOf(ApprovalOptionsError);
      expect((err as ApprovalOptionsError).code).toBe('APPROVAL_OPTIONS_INVALID');
      expect((err as ApprovalOptionsError).nonRetryable).toBe(true);
      expect((err as Error).message).toBe(
        `approval options: timeout ${JSON.stringify(bad)} is not a positive duration; give milliseconds or e.g. '90s', '30m', '24h', '7d'`,
      );
    }
    expect(() => resolveApprovalOptions({ onTimeout: 'commit' as 'refuse' })).toThrow(
      `approval options: onTimeout "commit" is neither 'rollback' nor 'refuse'`,
    );
    expect(() => resolveApprovalOptions({ deciders: ['reviewer', ''] })).toThrow(
      'approval options: deciders must be a list of non-empty names',
    );
  });
});
