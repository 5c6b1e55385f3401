/**
 * What exactly-once tool steps cost: a booth tool step with its step checkpoint (pending area, checkpoint,
 * merge into the run's staging) beside the same tool step staging straight into the run's staging (no
 * checkpoint), alternated in the same run, for a files-only tool (one append) and a files + SQL tool (an append
 * and an `UPDATE ... SET n = n + 1`, whose shadow transaction commits with the checkpoint row).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { BoothRuntime, type ShadowBooth } from '../../src/booth/shadowBooth';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';

type Tool = (booth: ShadowBooth, i: number) => Promise<string>;

const appendTool: Tool = async (booth, i) => {
  await booth.files.appendFile('ledger.csv', `payment,${i}\n`);
  return `recorded ${i}`;
};

const appendAndUpdateTool: Tool = async (booth, i) => {
  await booth.files.appendFile('ledger.csv', `payment,${i}\n`);
  await (await booth.sql()).query('UPDATE counters SET n = n + 1 WHERE name = ?', ['payments']);
  return `recorded ${i}`;
};

async function world(dir: string): Promise<BoothRuntime> {
  fs.mkdirSync(path.join(dir, 'workspace'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'workspace/ledger.csv'), 'kind,ref\n');
  const file = path.join(dir, 'db.sqlite');
  fs.writeFileSync(file, '');
  const db = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
  await db.raw('CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)');
  await db.raw("INSERT INTO counters VALUES ('payments', 0)");
  await db.destroy();
  return new BoothRuntime({
    workspaceRoot: path.join(dir, 'workspace'),
    stagingRoot: path.join(dir, 'staging'),
    sqlite: file,
  });
}

async function withCheckpoint(runtime: BoothRuntime, tool: Tool, i: number): Promise<number> {
  const t0 = performance.now();
  const opened = await runtime.openStep('bench', 'run', { id: `s${i}`, attempt: 1 });
  await opened.booth.completeStep(await tool(opened.booth, i));
  await opened.booth.close();
  return performance.now() - t0;
}

async function withoutCheckpoint(runtime: BoothRuntime, tool: Tool, i: number): Promise<number> {
  const t0 = performance.now();
  const plain = await runtime.open('bench', 'run');
  await tool(plain, i);
  await plain.close();
  return performance.now() - t0;
}

/**
 * Median ms of a tool step with and without its checkpoint, alternated so both see the same machine, and
 * which goes first alternates too, so neither always inherits the other's pending disk work.
 */
async function measure(runtime: BoothRuntime, tool: Tool, runs: number) {
  const withCp: number[] = [];
  const without: number[] = [];
  for (let i = 0; i <= runs; i++) {
    let a: number;
    let b: number;
    if (i % 2 === 0) {
      a = await withCheckpoint(runtime, tool, i);
      b = await withoutCheckpoint(runtime, tool, i);
    } else {
      b = await withoutCheckpoint(runtime, tool, i);
      a = await withCheckpoint(runtime, tool, i);
    }
    if (i > 0) {
      withCp.push(a);
      without.push(b);
    }
  }
  return { with: median(withCp), without: median(without) };
}

export const stepCheckpointSuite: BenchSuite = {
  name: 'stepCheckpoint',
  breaker: NO_AGENT_NOTE,
  async run(): Promise<BenchResult[]> {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-steps-'));
    const out: BenchResult[] = [];
    try {
      for (const [label, tool] of [
        ['files tool (one append)', appendTool],
        ['files + SQL tool (append, n = n + 1)', appendAndUpdateTool],
      ] as const) {
        const runtime = await world(path.join(base, label.replace(/\W+/g, '-')));
        try {
          const m = await measure(runtime, tool, 200);
          out.push(
            result(
              `tool step with checkpoint, ${label}`,
              m.with,
              'ms',
              'same tool step without checkpoint',
              m.without,
            ),
            result(
              `step checkpoint cost per tool step, ${label}`,
              m.with - m.without,
              'ms',
              'tool step without checkpoint',
              m.without,
              'target <= 1 ms (difference of the medians above)',
            ),
          );
        } finally {
          await runtime.close();
        }
      }
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
    return out;
  },
};
