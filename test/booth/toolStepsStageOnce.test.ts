/**
 * A tool step's staging counts once: a retried attempt either reuses a checkpointed attempt's staging (and its
 * result) or throws a partial one away and stages afresh, for files, SQL, MCP escrow and shell alike. Attempts
 * are driven by hand here, the way Temporal retries them; test/temporal/workflow/stepFaults.test.ts kills real workers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import {
  expectedWorld,
  prepareStepWorld,
  readWorld,
  recordPaymentTool,
  type StepWorld,
  stepWorldBooth,
} from '../support/stepWorld';

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-steps-'));
let world: StepWorld;
let runtime: BoothRuntime;
let runs = 0;
let run: string;
/** A crash point where the step dies (the fault hook throws, like a killed worker it stops there). */
let dieAt: string | null = null;

async function attempt(id: string, n: number, opts: { complete: boolean } = { complete: true }) {
  const opened = await runtime.openStep('wf', run, { id, attempt: n });
  try {
    if (opened.reused) return { ...opened, result: opened.reused.result };
    const result = await recordPaymentTool.run(
      { ref: id },
      { signal: new AbortController().signal, booth: opened.booth },
    );
    if (opened && opts.complete) await opened.booth.completeStep(result);
    return { ...opened, result };
  } finally {
    await opened.booth.close();
  }
}

async function commitRun() {
  const booth = await runtime.open('wf', run);
  try {
    await booth.commitFiles();
    await booth.commitSql();
    await booth.mcp.commit();
    await booth.removeStaging();
  } finally {
    await booth.close();
  }
}

beforeAll(() => {});
afterAll(async () => {
  await runtime?.close();
  fs.rmSync(base, { recursive: true, force: true });
});

beforeEach(async () => {
  await runtime?.close();
  world = await prepareStepWorld(path.join(base, `w${++runs}`));
  run = `run${runs}`;
  dieAt = null;
  runtime = new BoothRuntime(
    stepWorldBooth(world, {
      faultPoint: (point) => {
        if (point === dieAt) throw new Error(`died at ${point}`);
      },
    }),
  );
});

describe('a retried tool step stages exactly once', () => {
  it('discards a partial attempt (append, move, delete, n = n + 1, INSERT, notify_customer, shell) and stages afresh', async () => {
    const first = await attempt('1', 1, { complete: false });
    expect(first.staging).toEqual({ attempt: 1, reused: false });
    // Nothing of an attempt that did not complete is visible to the run.
    const view = await runtime.open('wf', run);
    expect(await view.files.changes()).toEqual([]);
    expect(await view.mcp.calls()).toEqual([]);
    expect((await (await view.sql()).query("SELECT n FROM counters WHERE name = 'payments'")).rows).toEqual([
      { n: 0 },
    ]);
    await view.close();

    const second = await attempt('1', 2);
    expect(second.staging).toEqual({ attempt: 2, reused: false, discarded: 1 });
    const third = await attempt('1', 3);
    expect(third.staging).toEqual({ attempt: 2, reused: true });
    expect(third.result).toBe('recorded 1');

    await attempt('2', 1);
    await commitRun();
    expect(await readWorld(world)).toEqual(expectedWorld(['1', '2']));
  });

  it('reuses a step whose statements committed on the shadow when the checkpoint file was never written', async () => {
    // Killed right after the shadow transaction committed with the checkpoint row, before the checkpoint file.
    dieAt = 'step:sql-checkpointed';
    await expect(attempt('1', 1)).rejects.toThrow('died at step:sql-checkpointed');
    dieAt = null;

    const retry = await attempt('1', 2);
    expect(retry.staging).toEqual({ attempt: 1, reused: true });
    expect(retry.result).toBe('recorded 1');
    await commitRun();
    expect(await readWorld(world)).toEqual(expectedWorld(['1']));
  });

  it('merges a checkpointed step once however often it is reused', async () => {
    await attempt('1', 1);
    for (const n of [2, 3, 4]) expect((await attempt('1', n)).staging).toEqual({ attempt: 1, reused: true });
    const view = await runtime.open('wf', run);
    expect((await view.mcp.calls()).map((c) => [c.seq, c.step])).toEqual([[0, '1']]);
    await view.close();
    await commitRun();
    expect(await readWorld(world)).toEqual(expectedWorld(['1']));
  });

  it('does not count a partial attempt whose attempt marker a power loss took', async () => {
    await attempt('1', 1, { complete: false });
    // The marker is not fsynced: a power loss may take it and keep the attempt's pending calls.
    const marker = path.join(runtime.runDir('wf', run), 'attempts', '1');
    expect(fs.lstatSync(marker, { throwIfNoEntry: false })).toBeDefined();
    fs.rmSync(marker);

    const retry = await attempt('1', 2);
    expect(retry.staging).toEqual({ attempt: 2, reused: false });
    await commitRun();
    expect(await readWorld(world)).toEqual(expectedWorld(['1']));
  });

  it("a step's refused statement undoes only itself, first or later, and the step's other statements count", async () => {
    const opened = await runtime.openStep('wf', run, { id: '1', attempt: 1 });
    const sql = await opened.booth.sql();
    // The first statement runs without a savepoint of its own: refused, it takes the step's transaction with it.
    await expect(sql.query("INSERT INTO counters VALUES ('payments', 9)")).rejects.toThrow();
    await sql.query('UPDATE counters SET n = n + 1');
    await expect(sql.query("INSERT INTO counters VALUES ('payments', 9)")).rejects.toThrow();
    await sql.query('UPDATE counters SET n = n + 10');
    expect(await opened.booth.completeStep('done')).toBe(true);
    await opened.booth.close();
    const view = await runtime.open('wf', run);
    const staged = await view.sql();
    expect((await staged.query('SELECT n FROM counters')).rows).toEqual([{ n: 11 }]);
    expect((await staged.writeSet()).statements.map((st) => st.statement)).toEqual([
      'UPDATE counters SET n = n + 1',
      'UPDATE counters SET n = n + 10',
    ]);
    await view.close();
  });

  it('names the discarded attempt from a marker link, or from the JSON marker file an earlier version wrote', async () => {
    await attempt('1', 1, { complete: false });
    const marker = path.join(runtime.runDir('wf', run), 'attempts', '1');
    expect(fs.readlinkSync(marker)).toBe('1');
    fs.rmSync(marker);
    fs.writeFileSync(marker, JSON.stringify({ attempt: 3 }));
    const retry = await attempt('1', 4);
    expect(retry.staging).toEqual({ attempt: 4, reused: false, discarded: 3 });
    await commitRun();
    expect(await readWorld(world)).toEqual(expectedWorld(['1']));
  });

  it('a step that fails leaves nothing staged', async () => {
    const opened = await runtime.openStep('wf', run, { id: '1', attempt: 1 });
    await opened.booth.files.appendFile('ledger.csv', 'half\n');
    await (await opened.booth.sql()).query('UPDATE counters SET n = n + 1');
    await opened.booth.close();
    const view = await runtime.open('wf', run);
    expect(await view.files.changes()).toEqual([]);
    expect((await (await view.sql()).query('SELECT n FROM counters')).rows).toEqual([{ n: 0 }]);
    await view.close();
  });
});
