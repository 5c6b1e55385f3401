/**
 * `jbx ls` over 10,000 tapes, against `ls -l` of the same folder in the same run: the whole `jbx` process
 * (start-up included), cold (every tape read and verified, the catalog index written) and warm (rows from the
 * index, one stat per tape), plus a filtered, sorted listing.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TapeWriter } from '../../src/recorder/tape';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { JBX_BIN } from '../paths';

const TAPES = 10_000;
const RUNS = 5;
const BIN = JBX_BIN;

/** Eight distinct recordings (outcome, workflow, steps, cost vary), copied to TAPES files. */
async function makeTapes(dir: string): Promise<void> {
  const seeds: string[] = [];
  const outcomes = [
    'completed',
    'failed',
    'completed',
    undefined,
    'completed',
    'failed',
    'cancelled',
    'completed',
  ];
  for (let i = 0; i < outcomes.length; i++) {
    const file = path.join(dir, `seed-${i}.src`);
    const w = await TapeWriter.open(
      file,
      {
        tapeId: `seed-${i}/r`,
        createdAtMs: Date.now() - i * 3_600_000,
        workflowType: i % 2 ? 'accountingAgent' : 'researchAgent',
        workflowId: `seed-${i}`,
        runId: 'r',
        taskQueue: 'bench',
        agentCodeHash: 'blake3:00',
      },
      { fsync: 'none' },
    );
    for (let step = 0; step < 4 + i * 3; step++) {
      const activityId = String(step + 1);
      const msg = await w.putValue(
        { role: 'assistant', content: `step ${step} of seed ${i} `.repeat(8) },
        { step },
      );
      void w.append({
        kind: 'activity.start',
        step,
        payload: { activityId, attempt: 1, activityType: 'llmStep' },
      });
      void w.append({
        kind: 'llm.request',
        step,
        payload: { activityId, model: 'gpt-4o-mini', messages: msg },
      });
      void w.append({
        kind: 'llm.response',
        step,
        payload: {
          activityId,
          message: msg,
          usage: { inputTokens: 100, outputTokens: 20 },
          cost: 0.0001 * (step + 1),
        },
      });
      void w.append({ kind: 'activity.complete', step, payload: { activityId, attempt: 1 } });
    }
    const o = outcomes[i];
    if (o) await w.seal({ status: o }, { step: 999 });
    await w.close();
    seeds.push(file);
  }
  for (let i = 0; i < TAPES; i++)
    copyFileSync(seeds[i % seeds.length]!, path.join(dir, `run-${String(i).padStart(5, '0')}--r.jbx`));
  for (const s of seeds) rmSync(s);
}

function timed(argv: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

export const tapeListingSuite: BenchSuite = {
  name: 'tapeListing',
  breaker: NO_AGENT_NOTE,
  async run(): Promise<BenchResult[]> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-bench-ls-'));
    try {
      await makeTapes(dir);
      const lsL = () => timed(['ls', '-l', dir]);
      const jbx = (...args: string[]) => timed([process.execPath, BIN, 'ls', '--dir', dir, ...args]);
      lsL(); // warm the directory cache for both
      const cold = jbx('--json');
      const peer: number[] = [];
      const warm: number[] = [];
      const filtered: number[] = [];
      // Interleaved, so load from anything else on the machine falls on both sides alike.
      for (let i = 0; i < RUNS; i++) {
        peer.push(lsL());
        warm.push(jbx());
        filtered.push(jbx('--outcome', 'failed', '--sort', 'cost', '--limit', '20', '--json'));
      }
      const bare: number[] = [];
      for (let i = 0; i < RUNS; i++) bare.push(timed([process.execPath, '-e', '0']));
      const p = median(peer);
      return [
        result(`jbx ls, ${TAPES} tapes, warm (catalog index)`, median(warm), 'ms', 'ls -l', p),
        result(`jbx ls --outcome --sort --limit, ${TAPES} tapes, warm`, median(filtered), 'ms', 'ls -l', p),
        result(
          `jbx ls, ${TAPES} tapes, cold (every tape read and verified)`,
          cold,
          'ms',
          'ls -l',
          p,
          'first listing of a folder, or after every tape changed',
        ),
        result(
          'node start-up alone (node -e 0)',
          median(bare),
          'ms',
          'ls -l',
          p,
          'the floor under any jbx command',
        ),
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
