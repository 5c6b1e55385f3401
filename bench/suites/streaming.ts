/**
 * Live streaming and what-if experiments (docs/streaming.md, docs/experiments.md).
 *
 * Follower latency: a writer appends model chunks to a tape through the real TapeWriter, 5 ms apart as a model
 * streams them, and each follower notes when every chunk reached it: one `followTape` follower, 100 of them on
 * the same tape, and a client of `jbx view`'s event stream (SSE over loopback HTTP). The peer is reading the
 * tape: the same chunk frames read from the finished file, per frame. What a follower adds above it is its
 * wake-up (an inotify event, then a read of the new bytes) and, for SSE, the HTTP hop.
 *
 * Experiment throughput: runs recorded live on the dev server, then `runExperiment` over them with a changed
 * request field, both at the same concurrency on the same worker: runs a second each way.
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { stepScript } from '../../examples/sample/stepScript';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { startViewer } from '../../src/cli/viewer';
import { tapeFileName } from '../../src/recorder/naming';
import { readTape, TapeWriter } from '../../src/recorder/tape';
import { followTape } from '../../src/stream';
import { runExperiment, startAgent } from '../../src/temporal';
import { startModelServer } from '../../src/testing/modelserver';
import { SCRIPTED_MODEL_BREAKER_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { sampleAgentWorker } from '../sampleWorker';

const CHUNKS = 200;
const GAP_MS = 5;
const FOLLOWERS = 100;
const EXPERIMENT_RUNS = 16;
const CONCURRENCY = 4;
const STEPS = 3;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Per-chunk latencies (ms) of every follower, and the per-frame cost of reading the finished tape. */
async function followerLatency(
  dir: string,
  followers: number,
  sse: boolean,
): Promise<{ latencies: number[]; readPerFrameMs: number }> {
  const id = tapeFileName(`stream-${followers}-${sse ? 'sse' : 'direct'}`, 'run-1');
  const file = path.join(dir, id);
  const w = await TapeWriter.open(file, {
    tapeId: `${id}/run-1`,
    createdAtMs: Date.now(),
    workflowType: 'researchAgent',
    workflowId: id,
    runId: 'run-1',
    taskQueue: 'bench',
    agentCodeHash: `blake3:${'00'.repeat(32)}`,
  });
  const ids = { activityId: '1', attempt: 1 };
  await w.append({ kind: 'activity.start', step: 0, payload: { ...ids, activityType: 'llmStep' } });
  // Position of each chunk frame -> when its append returned (the bytes are in the file).
  const written = new Map<number, number>();
  const latencies: number[] = [];
  const note = (position: number) => {
    const t = written.get(position);
    if (t !== undefined) latencies.push(performance.now() - t);
  };
  const stop = new AbortController();
  // Every follower listens on the one signal.
  setMaxListeners(followers + 10, stop.signal);
  let done: Promise<unknown>;
  let close = async () => {};
  if (sse) {
    const viewer = await startViewer({ dir });
    close = () => viewer.close();
    done = Promise.all(
      Array.from({ length: followers }, async () => {
        const res = await fetch(
          `${viewer.url}api/runs/${encodeURIComponent(id.replace(/\.jbx$/, ''))}/events`,
          {
            signal: stop.signal,
          },
        );
        const decoder = new TextDecoder();
        let buffer = '';
        for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(bytes, { stream: true });
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf('\n\n');
            const m = /^id: (\d+)$/m.exec(event);
            if (m) note(Number(m[1]));
            if (event.startsWith('event: end')) return;
          }
        }
      }),
    );
  } else {
    done = Promise.all(
      Array.from({ length: followers }, async () => {
        for await (const item of followTape(file, { signal: stop.signal })) note(item.position);
      }),
    );
  }
  await sleep(200); // every follower has read the start and waits at the tail
  for (let i = 0; i < CHUNKS; i++) {
    const { index } = await w.append({
      kind: 'llm.chunk',
      step: 0,
      payload: { ...ids, chunks: [[i, i * GAP_MS, `token ${i} of the streamed answer `]] },
    });
    written.set(index, performance.now());
    await sleep(GAP_MS);
  }
  await w.seal({ status: 'completed', result: null }, { step: 1 });
  await w.close();
  await Promise.race([done, sleep(10_000)]);
  stop.abort();
  await close();
  if (latencies.length !== CHUNKS * followers)
    throw new Error(`followers saw ${latencies.length} chunks, expected ${CHUNKS * followers}`);
  const reads: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const tape = readTape(file);
    reads.push((performance.now() - t0) / tape.frames.length);
  }
  return { latencies, readPerFrameMs: median(reads) };
}

async function experimentThroughput(): Promise<{ liveRunsPerS: number; experimentRunsPerS: number }> {
  const config = temporalConfigFromEnv();
  await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
  const model = await startModelServer({ script: stepScript(STEPS) });
  const nativeConnection = await NativeConnection.connect({ address: config.address });
  const connection = await Connection.connect({ address: config.address });
  const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-experiment-'));
  const taskQueue = `bench-experiment-${Date.now().toString(36)}`;
  try {
    const worker = await sampleAgentWorker({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      modelUrl: model.url,
      tape: { dir: tapeDir },
    });
    return await worker.runUntil(async () => {
      const input = { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 };
      const start = () =>
        startAgent('researchAgent', input, {
          connection,
          namespace: config.namespace,
          taskQueue,
        }).then((h) => h.result());
      await start(); // untimed warm-up, its tape part of the experiment's folder like the rest
      const t0 = performance.now();
      let next = 1;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next++ < EXPERIMENT_RUNS) await start();
        }),
      );
      const liveMs = performance.now() - t0;
      const t1 = performance.now();
      const report = await runExperiment({
        dir: tapeDir,
        change: { overrides: { set: { temperature: 0 } } },
        connection,
        namespace: config.namespace,
        tapeDir,
        concurrency: CONCURRENCY,
      });
      const experimentMs = performance.now() - t1;
      if (report.totals.done !== EXPERIMENT_RUNS)
        throw new Error(`the experiment ran ${report.totals.done} of ${EXPERIMENT_RUNS} runs`);
      return {
        // The warm-up is not timed: EXPERIMENT_RUNS - 1 live runs in liveMs.
        liveRunsPerS: (EXPERIMENT_RUNS - 1) / (liveMs / 1000),
        experimentRunsPerS: EXPERIMENT_RUNS / (experimentMs / 1000),
      };
    });
  } finally {
    await connection.close();
    await nativeConnection.close();
    await model.close();
    rmSync(tapeDir, { recursive: true, force: true });
  }
}

export const streamingSuite: BenchSuite = {
  name: 'streaming',
  breaker: `follower rows: ${'not involved (no agent runs)'}; experiment rows: ${SCRIPTED_MODEL_BREAKER_NOTE}`,
  async run(): Promise<BenchResult[]> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-stream-'));
    const rows: BenchResult[] = [];
    try {
      for (const [label, followers, sse] of [
        ['1 follower (followTape)', 1, false],
        [`${FOLLOWERS} followers of one run (followTape)`, FOLLOWERS, false],
        ['1 client of jbx view SSE', 1, true],
        [`${FOLLOWERS} clients of jbx view SSE`, FOLLOWERS, true],
      ] as const) {
        const { latencies, readPerFrameMs } = await followerLatency(dir, followers, sse);
        const note = `${CHUNKS} chunks ${GAP_MS} ms apart; p99 ${percentile(latencies, 0.99).toFixed(2)} ms`;
        rows.push(
          result(
            `chunk append -> delivered, p50, ${label}`,
            percentile(latencies, 0.5),
            'ms',
            'reading the tape, a frame',
            readPerFrameMs,
            note,
          ),
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const x = await experimentThroughput();
    rows.push(
      result(
        `jbx experiment throughput, ${EXPERIMENT_RUNS} ${STEPS}-step runs, concurrency ${CONCURRENCY}`,
        x.experimentRunsPerS,
        'runs/s',
        'the same runs live',
        x.liveRunsPerS,
        'higher is better: each fork reads its recording, runs live from its first model step, then is diffed',
      ),
    );
    return rows;
  },
};
