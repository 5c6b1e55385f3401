import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alignSteps, diffTimelines, type StepView } from '../../../src/timetravel/diff';
import { readTimeline } from '../../../src/timetravel/replay';
import { runJbx } from '../replay/jbx';
import { recordRunAndFork } from './forkedTimelines';

const view = (
  step: number,
  kind: 'llm' | 'tool',
  name: string,
  output: string,
  prompt?: string,
): StepView => ({
  step,
  kind,
  name,
  output,
  ...(prompt ? { prompt } : {}),
  tokens: { input: 0, output: 0 },
  cost: null,
  effects: [],
});

describe('jbx diff: two timelines aligned step by step', () => {
  let recorded: Awaited<ReturnType<typeof recordRunAndFork>>;

  beforeAll(async () => {
    recorded = await recordRunAndFork();
  });
  afterAll(async () => {
    await recorded?.setup.close();
  });

  it('re-aligns after inserted steps instead of comparing index by index', () => {
    const d = diffTimelines(readTimeline(recorded.parent), readTimeline(recorded.fork));
    expect(d.a.steps).toBe(7);
    expect(d.b.steps).toBe(9);
    expect(d.rows.map((r) => [r.status, r.a?.step ?? null, r.b?.step ?? null])).toEqual([
      ['same', 0, 0],
      ['same', 1, 1],
      ['same', 2, 2],
      ['same', 3, 3],
      // Both answer the 40075 lookup; gpt-4o detours through one more lookup, inserted, then they meet again.
      ['changed', 4, 4],
      ['inserted', null, 5],
      ['inserted', null, 6],
      ['same', 5, 7],
      ['changed', 6, 8],
    ]);
    expect(d.firstDivergence).toBe(4);
    expect(d.counts).toEqual({ same: 5, changed: 2, removed: 0, inserted: 2 });
    const changed = d.rows[4]!;
    expect(changed.differences.map((x) => x.field)).toEqual(expect.arrayContaining(['model', 'output']));
    expect(changed.differences.map((x) => x.field)).not.toContain('prompt');
    expect(changed.differences.find((x) => x.field === 'model')).toEqual({
      field: 'model',
      a: 'gpt-4o-mini',
      b: 'gpt-4o',
    });
    expect(d.rows[5]!.b).toMatchObject({
      kind: 'tool',
      name: 'lookup_fact',
      args: { topic: 'earth radius km' },
    });
    // Summary: steps, tokens, cost, outcome of each side, and the fork's lineage.
    expect(d.a.outcome).toBe('completed');
    expect(d.b).toMatchObject({ outcome: 'completed', parent: { forkStep: 4 } });
    expect(d.b.tokens.input).toBeGreaterThan(d.a.tokens.input);
  });

  it('a removed step shows as only-in-A and the rest still pairs up', () => {
    const a = [
      view(0, 'llm', 'm', 'x', 'q'),
      view(1, 'tool', 'lookup', 'r1'),
      view(2, 'llm', 'm', 'y', 'r1'),
      view(3, 'tool', 'calc', '9'),
    ];
    const b = [view(0, 'llm', 'm', 'x', 'q'), view(1, 'tool', 'calc', '9')];
    const rows = alignSteps(a, b);
    expect(rows.map((r) => r.status)).toEqual(['same', 'removed', 'removed', 'same']);
  });

  it('prints side by side within the terminal width, and --json carries the same diff', async () => {
    const r = await runJbx(['diff', recorded.parent, recorded.fork, '--width', '100']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    for (const l of lines) expect([...l].length).toBeLessThanOrEqual(100);
    expect(lines.filter((l) => l.includes('│')).length).toBeGreaterThan(9);
    expect(r.stdout).toMatch(/▼ first divergence/);
    expect(r.stdout).toMatch(/5 same, 2 changed, 0 only in A, 2 only in B; outcome A completed, B completed/);
    const narrow = await runJbx(['diff', recorded.parent, recorded.fork, '--width', '60']);
    for (const l of narrow.stdout.trimEnd().split('\n')) expect([...l].length).toBeLessThanOrEqual(60);

    const json = await runJbx(['diff', recorded.parent, recorded.fork, '--json']);
    expect(json.code).toBe(0);
    const d = JSON.parse(json.stdout);
    expect(d.firstDivergence).toBe(4);
    expect(d.counts).toEqual({ same: 5, changed: 2, removed: 0, inserted: 2 });
    const usage = await runJbx(['diff', recorded.parent]);
    expect(usage.code).toBe(2);
  });
});
