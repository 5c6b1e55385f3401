/**
 * The replay suite's booth rows: the accounting quickstart's two runs (a refund committed, a refund its gate
 * refused and rolled back), recorded on a worker with a Shadow Booth, replayed offline with their commit steps
 * beside the research agent's tape; and a folder of their copies replayed by one `jbx replay DIR` process
 * against one `jbx replay TAPE` process per tape.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { AccountingOutput } from '../examples/accounting/agent';
import { ACCOUNTING_SCRIPT, accountingBooth, prepareAccountingDemo } from '../examples/accounting/demo';
import { accountingTools } from '../examples/accounting/tools';
import { BoothRuntime } from '../src/booth/shadowBooth';
import { localEndpoints } from '../src/llm';
import { captureRunHistory, createJukeboxWorker, loadStoredHistory, startAgent } from '../src/temporal';
import { startModelServer } from '../src/testing/modelserver';
import { readTimeline } from '../src/timetravel/replay';
import { median } from './harness';

const REQUESTS = [
  'Refund $120 to customer C-1001: duplicate charge.',
  'Refund $750 to customer C-2002: service outage credit.',
];

export async function recordQuickstartTapes(options: {
  connection: Connection;
  nativeConnection: NativeConnection;
  namespace: string;
  workflowBundle: { code: string };
  dir: string;
}): Promise<string[]> {
  const model = await startModelServer({ script: ACCOUNTING_SCRIPT });
  const demo = await prepareAccountingDemo(path.join(options.dir, 'demo'));
  const booth = new BoothRuntime(accountingBooth(demo));
  const tapeDir = path.join(options.dir, 'tapes');
  const taskQueue = `bench-booth-replay-${Date.now()}`;
  try {
    const worker = await createJukeboxWorker({
      connection: options.nativeConnection,
      namespace: options.namespace,
      taskQueue,
      endpoints: localEndpoints(model.url),
      tools: accountingTools,
      workflowBundle: options.workflowBundle,
      booth,
      tape: { dir: tapeDir, fsync: 'none' },
    });
    return await worker.runUntil(async () => {
      const tapes: string[] = [];
      for (const request of REQUESTS) {
        const h = await startAgent<{ request: string }, AccountingOutput>(
          'accountingAgent',
          { request },
          { connection: options.connection, namespace: options.namespace, taskQueue },
        );
        await h.result();
        tapes.push((await captureRunHistory(h, tapeDir)).tapeFile);
      }
      return tapes;
    });
  } finally {
    await booth.close();
    await model.close();
  }
}

/** `tsx bench/replayLoop.ts`: per-replay time of one tape in a process that only replays. */
export function replayLoopMs(
  replayLoop: string,
  tape: string,
  runs: number,
): { perReplayMs: number; steps: number } {
  const loop = spawnSync(process.execPath, ['--import', 'tsx', replayLoop, tape, String(runs)], {
    encoding: 'utf8',
  });
  if (loop.status !== 0) throw new Error(`bench/replayLoop.ts failed: ${loop.stderr}`);
  return JSON.parse(loop.stdout) as { perReplayMs: number; steps: number };
}

export function historyEvents(tape: string): number {
  return loadStoredHistory(tape).history.events?.length ?? 0;
}

/** `count` copies of the tapes (their code store beside them), as a production host's tape folder. */
export function tapeFolder(tapes: string[], count: number, dir: string): string {
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(path.dirname(tapes[0]!), 'code'), path.join(dir, 'code'), { recursive: true });
  for (let i = 0; i < count; i++) {
    const t = tapes[i % tapes.length]!;
    copyFileSync(t, path.join(dir, `${String(i).padStart(5, '0')}-${path.basename(t)}`));
  }
  return dir;
}

/** Wall time of one `jbx` process, and whether it exited as expected. */
export function jbxOnce(bin: string, args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [bin, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`jbx ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return performance.now() - t0;
}

export function medianOf(runs: number, once: () => number): number {
  return median(Array.from({ length: runs }, once));
}

export function stepsOf(tape: string): number {
  const t = readTimeline(tape);
  return t.steps.length + t.booth.length;
}
