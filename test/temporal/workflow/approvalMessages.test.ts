/**
 * The names a decision travels under are part of the public contract (the Temporal CLI or another SDK can send
 * them), and docs/approvals.md names the same ones where it says which is used when, and why.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { approvalQuery, decideUpdate, decisionSignal } from '../../../src/temporal';

const DOC = fs.readFileSync(path.resolve(__dirname, '../../../docs/approvals.md'), 'utf8');

/** The text of one `## ` section of the doc. */
function section(heading: string): string {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/approvals.md has a section "${heading}"`).toBeGreaterThan(0);
  const end = DOC.indexOf('\n## ', start + 1);
  return DOC.slice(start, end < 0 ? undefined : end);
}

describe('the messages a decision travels as', () => {
  it('are an update, a signal and a query under stable names', () => {
    expect(decideUpdate.name).toBe('jukebox.approval.decide');
    expect(decisionSignal.name).toBe('jukebox.approval.decision');
    expect(approvalQuery.name).toBe('jukebox.approval');
  });

  it('are documented with which is used when, and why', () => {
    const s = section('Update, or signal: which, and why');
    expect(s).toContain(`the Temporal **update** \`${decideUpdate.name}\` when a worker is there to take it`);
    expect(s).toContain(`else as the **signal** \`${decisionSignal.name}\``);
    // Why the update: its validator answers at once and a refusal leaves no trace.
    expect(s).toContain(
      'a rejected update leaves no\n  trace in the history while the caller gets the error',
    );
    // Why the signal too: an update is durable only once a worker accepts it.
    expect(s).toContain('an update is durable only once a worker **accepts** it');
    expect(s).toContain('`acceptWithinMs` (10 s; `jbx approve --wait S`)');
    expect(s).toContain(`listed by the \`${approvalQuery.name}\` query`);
  });
});
