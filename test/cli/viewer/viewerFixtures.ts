/**
 * Tapes for the viewer tests: the sample run and its fork recorded on Temporal (the final answer streamed
 * slowly enough to watch), and a run whose tool steps staged files, SQL and an MCP call, committed, rolled
 * back and tripped the breaker, written through the real recorder.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TapeRecorder } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import { forkRun } from '../../../src/temporal';
import type { ModelScript } from '../../../src/testing/modelserver';
import { DETOUR_SCRIPT } from '../../timetravel/diff/forkedTimelines';
import { QUESTION, recordingSetup } from '../../timetravel/replay/recordedRun';

export const ANSWER_CHUNK_DELAY_MS = 30;

/** The detour script, its final answer streamed in 8-character chunks 30 ms apart. */
const SLOW_ANSWER: ModelScript = {
  ...DETOUR_SCRIPT,
  turns: DETOUR_SCRIPT.turns.map((t) =>
    t.id === 'answer'
      ? { ...t, reply: { ...t.reply, chunkSize: 8, chunkDelayMs: ANSWER_CHUNK_DELAY_MS } }
      : t,
  ),
};

export async function recordRunAndFork() {
  const setup = await recordingSetup(SLOW_ANSWER);
  const { tapeFile: parent } = await setup.record({ question: QUESTION });
  const fork = await forkRun({
    parentTape: parent,
    atStep: 4,
    overrides: { model: 'gpt-4o' },
    connection: setup.env.connection,
    namespace: setup.env.namespace,
    taskQueue: setup.env.taskQueue,
    tapeDir: setup.tapeDir,
  });
  if (fork.error) throw new Error(`the fork failed: ${fork.error}`);
  return { setup, parent, fork: fork.tapeFile };
}

/** Tape content that would run script if the page ever treated it as HTML. */
export const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`;

export async function recordEffectsRun(dir: string): Promise<string> {
  const rec = new TapeRecorder({ dir, fsync: 'none', agentCodeHash: 'test' });
  const run = {
    workflowExecution: { workflowId: 'refund-7', runId: 'run-1' },
    workflowType: 'accountingAgent',
    taskQueue: 'viewer-test',
  };
  const text = (s: string) => new TextEncoder().encode(s);
  const toolStep = async (
    step: number,
    name: string,
    effects: (t: ReturnType<TapeRecorder['forActivity']>) => void,
    output: unknown,
  ) => {
    const t = rec.forActivity(
      { ...run, activityId: String(step + 1), attempt: 1, activityType: 'toolStep' },
      step,
    );
    t.start({ step, name, args: { customer: 'C-1001' } }, []);
    await t.toolCall(name, { customer: 'C-1001', note: HOSTILE });
    effects(t);
    t.toolResult(output);
    await t.complete(output);
  };
  await toolStep(
    0,
    'write_ledger',
    (t) =>
      t.effect('fs.mutation', async (s) => ({
        op: 'write',
        path: 'ledger.csv',
        after: await s.putValue(text('date,customer,amount\n2026-11-30,C-1001,-120\n'), 0),
      })),
    'ledger written',
  );
  await toolStep(
    1,
    'record_refund',
    (t) => {
      t.effect('fs.mutation', async (s) => ({
        op: 'append',
        path: 'ledger.csv',
        after: await s.putValue(
          text('date,customer,amount\n2026-11-30,C-1001,-120\n2026-12-01,C-1001,refund 120\n'),
          1,
        ),
      }));
      t.effect('sql.mutation', () => ({
        statement: 'update accounts set balance = balance + ? where id = ?',
        params: [12000, 'C-1001'],
        rowsAffected: 1,
        kind: 'write',
      }));
      t.effect('mcp.call', () => ({
        server: 'notify',
        method: 'tools/call',
        params: { name: 'notify_customer', arguments: { customer: 'C-1001', message: 'Refund of $120.00' } },
        escrowed: true,
        seq: 1,
      }));
    },
    HOSTILE,
  );
  const booth = rec.forActivity({ ...run, activityId: '3', attempt: 1, activityType: 'boothCommitFiles' }, 2);
  booth.start({ step: 2 }, []);
  booth.effect('commit', () => ({
    part: 'files',
    steps: 1,
    recovered: false,
    changes: [{ path: 'ledger.csv', op: 'append' }],
  }));
  await booth.complete({ ok: true });
  const gate = rec.forActivity({ ...run, activityId: '4', attempt: 1, activityType: 'boothRollback' }, 3);
  gate.start({ step: 3 }, []);
  gate.effect('rollback', () => ({ part: 'all', reason: 'refund of $750.00 exceeds the $500.00 threshold' }));
  await gate.complete({ ok: true });
  const llm = rec.forActivity({ ...run, activityId: '5', attempt: 1, activityType: 'llmStep' }, 4);
  llm.start({ step: 4 }, []);
  llm.effect('breaker.trip', () => ({
    detector: 'cost-cap',
    track: 'refunds',
    reason: 'track spend $0.51 passed its $0.50 cap',
    evidence: { spendUsd: 0.51 },
    spend: { usd: 0.51 },
  }));
  await llm.fail(new Error('circuit breaker open: cost-cap'), { willRetry: false, nonRetryable: true });
  const { path: file } = await rec.recordOutcome(run, {
    step: 5,
    status: 'failed',
    error: { name: 'BreakerTrippedError', message: 'cost-cap' },
  });
  await rec.close();
  return file;
}

/**
 * Copies of a recorded tape with damage: one byte flipped inside a frame's payload (the frame's hash fails;
 * every frame before it still verifies), and a file that is not a tape at all.
 */
export function damagedTapes(
  source: string,
  dir: string,
): { flipped: string; frame: number; notATape: string } {
  mkdirSync(dir, { recursive: true });
  const tape = readTape(source);
  const victim = tape.frames.find((f) => f.index >= 12 && f.kind !== 'blob' && f.length > 100)!;
  const flipped = path.join(dir, 'flipped.jbx');
  copyFileSync(source, flipped);
  const bytes = readFileSync(flipped);
  const at = victim.offset + victim.length - 10;
  bytes.writeUInt8(bytes.readUInt8(at) ^ 0xff, at);
  writeFileSync(flipped, bytes);
  const notATape = path.join(dir, 'not-a-tape.jbx');
  writeFileSync(notATape, `${HOSTILE}\nthis file was never a tape\n`);
  return { flipped, frame: victim.index, notATape };
}
