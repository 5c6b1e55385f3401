import { appendFileSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyQuery,
  CATALOG_INDEX_FILE,
  CatalogQueryError,
  catalogDirFromEnv,
  parseSince,
  TapeCatalog,
  type TapeQuery,
} from '../../../src/recorder/catalog';
import { tapeDirFromEnv } from '../../../src/recorder/store';
import { tempDir } from '../helpers';
import { writeSyntheticTape } from './syntheticTapes';

const DAY = 86_400_000;
const NOW = Date.parse('2026-12-03T08:00:00Z');

describe('the tape catalog', () => {
  const tmp = tempDir('jbx-catalog-');
  beforeAll(async () => {
    await writeSyntheticTape(tmp.dir, {
      name: 'a-ok',
      createdAtMs: NOW - 3 * DAY,
      costs: [0.01, 0.02],
      outcome: 'completed',
    });
    await writeSyntheticTape(tmp.dir, {
      name: 'b-fail',
      createdAtMs: NOW - 2 * DAY,
      costs: [0.5],
      outcome: 'failed',
    });
    await writeSyntheticTape(tmp.dir, {
      name: 'c-trip',
      workflowType: 'accountingAgent',
      createdAtMs: NOW - DAY,
      costs: [0.1, 0.2, 0.3, 0.4],
      outcome: 'failed',
      tripped: true,
    });
    await writeSyntheticTape(tmp.dir, { name: 'd-live', createdAtMs: NOW - 3_600_000, costs: [null] });
  });
  afterAll(() => tmp.cleanup());

  it('gives each recording its outcome, start, steps, cost and workflow', async () => {
    const rows = await new TapeCatalog({ dir: tmp.dir, index: false }).rows();
    expect(rows.map((r) => [r.id, r.outcome, r.tripped, r.steps, r.workflow])).toEqual([
      ['a-ok', 'completed', false, 2, 'researchAgent'],
      ['b-fail', 'failed', false, 1, 'researchAgent'],
      ['c-trip', 'failed', true, 4, 'accountingAgent'],
      ['d-live', 'running', false, 1, 'researchAgent'],
    ]);
    expect(rows[0]!.cost).toBeCloseTo(0.03, 10);
    expect(rows[3]!.cost).toBeNull();
    expect(rows[2]!.started).toBe(new Date(NOW - DAY).toISOString());
    expect(rows[0]!.tokens).toBe(24);
  });

  it('filters by outcome (tripped included), start and workflow; sorts and limits', async () => {
    const all = await new TapeCatalog({ dir: tmp.dir, index: false }).rows();
    const ids = (q: TapeQuery) => applyQuery(all, q).map((r) => r.id);
    expect(ids({ outcome: 'failed' })).toEqual(['b-fail', 'c-trip']);
    expect(ids({ outcome: 'tripped' })).toEqual(['c-trip']);
    expect(ids({ outcome: ['running', 'completed'] })).toEqual(['a-ok', 'd-live']);
    expect(ids({ since: NOW - 2 * DAY })).toEqual(['b-fail', 'c-trip', 'd-live']);
    expect(ids({ workflow: 'accountingAgent' })).toEqual(['c-trip']);
    expect(ids({ sort: 'cost' })).toEqual(['c-trip', 'b-fail', 'a-ok', 'd-live']);
    expect(ids({ sort: 'started' })).toEqual(['d-live', 'c-trip', 'b-fail', 'a-ok']);
    expect(ids({ sort: 'steps', limit: 2 })).toEqual(['c-trip', 'a-ok']);
    expect(ids({ outcome: 'failed', sort: 'cost', limit: 1 })).toEqual(['c-trip']);
  });

  it('finds the same default folder as the recorder', () => {
    for (const env of [{}, { JUKEBOX_TAPE_DIR: ' /srv/tapes ' }, { JUKEBOX_TAPE_DIR: '' }])
      expect(catalogDirFromEnv(env)).toBe(tapeDirFromEnv(env));
  });

  it('parses --since as a date or an age, and names the accepted forms otherwise', () => {
    expect(parseSince('2h', NOW)).toBe(NOW - 7_200_000);
    expect(parseSince('7d', NOW)).toBe(NOW - 7 * DAY);
    expect(parseSince('2026-12-01', NOW)).toBe(Date.parse('2026-12-01'));
    expect(parseSince('2026-12-01T09:30Z', NOW)).toBe(Date.parse('2026-12-01T09:30Z'));
    expect(() => parseSince('yesterday', NOW)).toThrow(CatalogQueryError);
    expect(() => parseSince('yesterday', NOW)).toThrow(/ISO date .* age \(30m, 2h, 7d, 1w\)/);
  });

  it('answers from its index until a tape changes, and follows appends, damage and removal', async () => {
    const dir = tempDir('jbx-catalog-index-');
    try {
      const live = await writeSyntheticTape(dir.dir, { name: 'live', createdAtMs: NOW, costs: [0.1] });
      const done = await writeSyntheticTape(dir.dir, {
        name: 'done',
        createdAtMs: NOW,
        costs: [0.1, 0.1],
        outcome: 'completed',
      });
      const gone = await writeSyntheticTape(dir.dir, {
        name: 'gone',
        createdAtMs: NOW,
        costs: [0.1],
        outcome: 'failed',
      });
      const catalog = new TapeCatalog({ dir: dir.dir });
      expect(await catalog.list()).toMatchObject({ total: 3, read: 3 });
      expect(statSync(path.join(dir.dir, CATALOG_INDEX_FILE)).isFile()).toBe(true);
      expect(await catalog.list()).toMatchObject({ total: 3, read: 0 });

      // The running tape gets another step and its seal: the next listing reads that tape alone.
      rmSync(live);
      await writeSyntheticTape(dir.dir, {
        name: 'live',
        createdAtMs: NOW,
        costs: [0.1, 0.2],
        outcome: 'completed',
      });
      const after = await catalog.list();
      expect(after.read).toBe(1);
      expect(after.rows.find((r) => r.id === 'live')).toMatchObject({ outcome: 'completed', steps: 2 });

      // A byte flipped in place (same size, mtime put back): the change time still differs.
      const st = statSync(done);
      const bytes = readFileSync(done);
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 200) ^ 0xff, bytes.length - 200);
      writeFileSync(done, bytes);
      utimesSync(done, st.atime, st.mtime);
      const damaged = await catalog.list();
      expect(damaged.read).toBe(1);
      expect(damaged.rows.find((r) => r.id === 'done')).toMatchObject({ outcome: 'damaged' });
      expect(damaged.rows.find((r) => r.id === 'done')!.problem).toMatch(/frame/);

      rmSync(gone);
      appendFileSync(live, Buffer.alloc(0));
      expect((await catalog.rows()).map((r) => r.id)).toEqual(['done', 'live']);
      const index = JSON.parse(readFileSync(path.join(dir.dir, CATALOG_INDEX_FILE), 'utf8'));
      expect(index.tapes.map((e: string[]) => e[0]).sort()).toEqual(['done.jbx', 'live.jbx']);

      // A garbled index is ignored and rebuilt.
      writeFileSync(path.join(dir.dir, CATALOG_INDEX_FILE), '{"format":1,"tapes":');
      expect(await catalog.list()).toMatchObject({ total: 2, read: 2 });
      expect(await catalog.list()).toMatchObject({ total: 2, read: 0 });
    } finally {
      dir.cleanup();
    }
  });
});
