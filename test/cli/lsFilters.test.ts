import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSyntheticTape } from '../recorder/catalog/syntheticTapes';
import { tempDir } from '../recorder/helpers';
import { runJbx } from '../timetravel/replay/jbx';

const NOW = Date.now();
const HOUR = 3_600_000;

describe('jbx ls filters', () => {
  const tmp = tempDir('jbx-ls-');
  beforeAll(async () => {
    await writeSyntheticTape(tmp.dir, {
      name: 'old-ok',
      createdAtMs: NOW - 72 * HOUR,
      costs: [0.01],
      outcome: 'completed',
    });
    await writeSyntheticTape(tmp.dir, {
      name: 'new-fail',
      createdAtMs: NOW - 2 * HOUR,
      costs: [0.2, 0.3],
      outcome: 'failed',
    });
    await writeSyntheticTape(tmp.dir, {
      name: 'trip',
      workflowType: 'accountingAgent',
      createdAtMs: NOW - HOUR,
      costs: [0.9, 0.1, 0.1],
      outcome: 'failed',
      tripped: true,
    });
    await writeSyntheticTape(tmp.dir, { name: 'live', createdAtMs: NOW - 60_000, costs: [null] });
  });
  afterAll(() => tmp.cleanup());

  const ids = async (...args: string[]) => {
    const r = await runJbx(['ls', '--dir', tmp.dir, '--json', ...args]);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { id: string }[]).map((x) => x.id);
  };

  it('--outcome, --since, --workflow, --sort and --limit narrow and order the JSON list', async () => {
    expect(await ids('--outcome', 'failed')).toEqual(['new-fail', 'trip']);
    expect(await ids('--outcome', 'tripped')).toEqual(['trip']);
    expect(await ids('--outcome', 'running,completed')).toEqual(['live', 'old-ok']);
    expect(await ids('--since', '24h')).toEqual(['live', 'new-fail', 'trip']);
    expect(await ids('--workflow', 'accountingAgent')).toEqual(['trip']);
    expect(await ids('--sort', 'cost', '--limit', '2')).toEqual(['trip', 'new-fail']);
    expect(await ids('--sort', 'started')).toEqual(['live', 'trip', 'new-fail', 'old-ok']);
    expect(await ids('--sort', 'steps', '--outcome', 'failed', '--limit', '1')).toEqual(['trip']);
  });

  it('prints a table for humans, marking tripped runs, and says when nothing matches', async () => {
    const table = await runJbx(['ls', '--dir', tmp.dir, '--outcome', 'tripped']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^id\s+workflow\s+started/);
    expect(table.stdout).toContain('failed (tripped)');
    const none = await runJbx(['ls', '--dir', tmp.dir, '--workflow', 'nobody']);
    expect(none.stdout).toContain('none of the 4 tapes');
  });

  it('rejects a bad filter with exit 2 and the accepted values', async () => {
    const since = await runJbx(['ls', '--dir', tmp.dir, '--since', 'last tuesday']);
    expect(since.code).toBe(2);
    expect(since.stderr).toContain('30m, 2h, 7d, 1w');
    const outcome = await runJbx(['ls', '--dir', tmp.dir, '--outcome', 'exploded']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain(
      'completed, failed, cancelled, terminated, timed-out, reset, running, tripped, rolled-back, damaged',
    );
    const sort = await runJbx(['ls', '--dir', tmp.dir, '--sort', 'size']);
    expect(sort.code).toBe(2);
    expect(sort.stderr).toContain('started, cost, steps');
    expect((await runJbx(['ls', '--dir', tmp.dir, '--limit', '0'])).code).toBe(2);
  });
});
