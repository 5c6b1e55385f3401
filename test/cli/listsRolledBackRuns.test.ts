import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startViewer, type Viewer } from '../../src/cli/viewer';
import {
  type AccountingTapes,
  recordAccountingRuns,
  VERIFIER_DOWN,
} from '../timetravel/replay/accountingRuns';
import { runJbx } from '../timetravel/replay/jbx';

const REFUSED =
  'refund-threshold: refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold; a person must approve it';
const MCP_FAILED =
  'McpToolFailedError: MCP tool notify/notify_customer failed: customer C-1001 cannot be reached: no contact on file';

describe('runs whose staging was rolled back say so in jbx ls, jbx show and the viewer', () => {
  let runs: Awaited<ReturnType<typeof recordAccountingRuns>>;
  let tapes: AccountingTapes;
  let viewer: Viewer;
  const id = (file: string) => path.basename(file, '.jbx');

  beforeAll(async () => {
    runs = await recordAccountingRuns();
    tapes = runs.tapes;
    viewer = await startViewer({ dir: runs.tapeDir });
  }, 300_000);
  afterAll(async () => {
    await viewer?.close();
    await runs?.close();
  });

  it("jbx ls: the outcome, the step and the gate's reason; --outcome rolled-back keeps exactly those runs", async () => {
    const r = await runJbx(['ls', '--dir', runs.tapeDir, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = new Map(
      (JSON.parse(r.stdout) as { id: string; outcome: string; rolledBack: unknown }[]).map((x) => [
        x.id,
        [x.outcome, x.rolledBack],
      ]),
    );
    expect(rows.get(id(tapes.committed))).toEqual(['completed', null]);
    expect(rows.get(id(tapes.refused))).toEqual(['completed', { step: 7, by: 'gate', reason: REFUSED }]);
    expect(rows.get(id(tapes.verifierFailed))).toEqual([
      'completed',
      { step: 7, by: 'gate', reason: `refund-threshold: the gate itself failed (${VERIFIER_DOWN})` },
    ]);
    expect(rows.get(id(tapes.partFailed))).toEqual([
      'failed',
      { step: 7, by: 'failure', reason: MCP_FAILED },
    ]);

    const human = await runJbx(['ls', '--dir', runs.tapeDir, '--outcome', 'rolled-back']);
    expect(human.code, human.stderr).toBe(0);
    const [head, ...lines] = human.stdout.trim().split('\n');
    expect(head).toMatch(/ outcome +tokens +cost +bytes +rolled back because$/);
    const byId = new Map(lines.map((l) => [l.split(/\s+/)[0], l]));
    expect([...byId.keys()].sort()).toEqual(
      [tapes.refused, tapes.verifierFailed, tapes.partFailed, tapes.rejected].map(id).sort(),
    );
    expect(byId.get(id(tapes.refused))).toMatch(
      / rolled back +\d+ .* step 7: refund-threshold: refund of \$750\.00 to C-2002 exceeds/,
    );
    expect(byId.get(id(tapes.partFailed))).toMatch(
      / failed \(rolled back\) .* step 7: McpToolFailedError: MCP tool notify/,
    );
  });

  it('jbx show: the outcome line and the JSON outcome', async () => {
    const r = await runJbx(['show', tapes.refused]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[3]).toBe(`outcome rolled back at step 7: ${REFUSED}`);
    const committed = await runJbx(['show', tapes.committed, '--json']);
    expect(JSON.parse(committed.stdout).outcome).toEqual({ status: 'completed', rolledBack: null });
  });

  it('the viewer: the run page data and the list filtered to rolled-back runs', async () => {
    const run = (await (
      await fetch(new URL(`/api/runs/${encodeURIComponent(id(tapes.refused))}`, viewer.url))
    ).json()) as {
      outcome: { status: string };
      rolledBack: unknown;
    };
    expect(run.outcome.status).toBe('completed');
    expect(run.rolledBack).toEqual({ step: 7, by: 'gate', reason: REFUSED });
    const list = (await (await fetch(new URL('/api/runs?outcome=rolled-back', viewer.url))).json()) as {
      rows: { id: string; rolledBack: { by: string } }[];
    };
    expect(list.rows.map((x) => [x.id, x.rolledBack.by]).sort()).toEqual(
      [
        [id(tapes.partFailed), 'failure'],
        [id(tapes.refused), 'gate'],
        [id(tapes.rejected), 'approval'],
        [id(tapes.verifierFailed), 'gate'],
      ].sort(),
    );
  });
});
