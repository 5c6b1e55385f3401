/**
 * Time travel: replaying a recorded 51-step run (26 model calls, 25 tool calls) in process from its tape,
 * against re-running the agent with the same 26 recorded HTTP exchanges replayed by Polly.js and by nock, and
 * against Temporal's own Worker.runReplayHistory of the same run; the whole `jbx replay` process; and a fork
 * at step 40 against re-running those steps live.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import FetchAdapter from '@pollyjs/adapter-fetch';
import { Polly, type PollyConfig } from '@pollyjs/core';
import FSPersister from '@pollyjs/persister-fs';
import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { researchAgent } from '../../examples/sample/agent';
import { stepScript } from '../../examples/sample/stepScript';
import { researchTools } from '../../examples/sample/tools';
import { startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { ToolRegistry } from '../../src/agent/tools';
import { LlmClient, localEndpoints } from '../../src/llm';
import { contentStoreFor } from '../../src/recorder/content';
import {
  bundleAgentWorkflows,
  captureRunHistory,
  createDirectContext,
  createJukeboxWorker,
  forkRun,
  loadStoredHistory,
  startAgent,
} from '../../src/temporal';
import { jukeboxDataConverter } from '../../src/temporal/content/dataConverter';
import { startModelServer } from '../../src/testing/modelserver';
import { readTimeline, replayTape } from '../../src/timetravel/replay';
import {
  historyEvents,
  jbxOnce,
  medianOf,
  recordQuickstartTapes,
  replayLoopMs,
  tapeFolder,
} from '../boothTapes';
import { type BenchSuite, median, result, timeRuns } from '../harness';
import { EXAMPLE_WORKFLOWS_PATH, JBX_BIN } from '../paths';

const REPLAY_LOOP = path.join(__dirname, '../replayLoop.ts');
const TURNS = 25; // 25 tool-calling model turns + the answer: 51 steps
const FORK_AT = 40;
const INPUT = { question: 'Walk the knowledge base.', maxTurns: TURNS + 2 };
const BIN = JBX_BIN;
const ROOT = path.join(__dirname, '../..');
/** Tapes in the folder `jbx replay DIR` replays against one process per tape. */
const FOLDER_TAPES = Number(process.env.JBX_BENCH_REPLAY_FOLDER ?? 1000);
/** Single `jbx replay TAPE` processes timed for the per-tape peer (its median times the folder's tape count). */
const SINGLE_PROCESSES = 5;

type Exchange = { url: string; body: string; status: number; headers: Record<string, string> };

/** Runs the agent directly (no Temporal) against `url`, as a peer that needs its HTTP answered. */
async function runDirect(url: string) {
  const ctx = createDirectContext({
    llm: new LlmClient(localEndpoints(url)),
    tools: new ToolRegistry(researchTools),
  });
  return researchAgent.run(ctx, INPUT);
}

/** One live direct run with fetch teed, so every model exchange's SSE body is captured verbatim. */
async function captureExchanges(url: string): Promise<Exchange[]> {
  const exchanges: Exchange[] = [];
  const real = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const res = await real(input, init);
    const body = await res.text();
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    exchanges.push({
      url: String(input instanceof Request ? input.url : input),
      body,
      status: res.status,
      headers,
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  try {
    await runDirect(url);
  } finally {
    globalThis.fetch = real;
  }
  return exchanges;
}

function processMs(args: string[], runs: number): number {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0) throw new Error(`jbx ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
    if (i > 0) times.push(performance.now() - t0);
  }
  return median(times);
}

export const replaySuite: BenchSuite = {
  name: 'replay',
  async run() {
    const config = temporalConfigFromEnv();
    await startDevServer({ detached: true });
    const script = () => stepScript(TURNS);
    const model = await startModelServer({ script: script() });
    const nativeConnection = await NativeConnection.connect({ address: config.address });
    const connection = await Connection.connect({ address: config.address });
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-replay-'));
    const workflowBundle = await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH);
    const taskQueue = `bench-replay-${Date.now()}`;
    const closers: (() => Promise<void>)[] = [];
    const worker = await createJukeboxWorker({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      workflowBundle,
      tape: { dir: tapeDir, fsync: 'none' },
    });
    try {
      const measured = await worker.runUntil(async () => {
        // The recorded run, and the same run live as the peer of the fork.
        let tapeFile = '';
        const live = await timeRuns(3, async () => {
          model.loadScript(script());
          const h = await startAgent('researchAgent', INPUT, {
            connection,
            namespace: config.namespace,
            taskQueue,
          });
          await h.result();
          tapeFile = (await captureRunHistory(h, tapeDir)).tapeFile;
        });
        const forks = await timeRuns(3, async () => {
          model.loadScript(script());
          const f = await forkRun({
            parentTape: tapeFile,
            atStep: FORK_AT,
            connection,
            namespace: config.namespace,
            taskQueue,
            tapeDir,
          });
          if (f.error) throw new Error(`fork failed: ${f.error}`);
        });
        return { tapeFile, liveMs: median(live), forkMs: median(forks) };
      });
      const { tapeFile } = measured;
      const timeline = readTimeline(tapeFile);
      const steps = timeline.steps.length;

      // In-process replay, tape already read (as a test or an eval loop replays it many times): in a process
      // that only replays (bench/replayLoop.ts), and, for comparison, inside this one, whose heap also holds a
      // Temporal worker, model servers and the HTTP peers.
      const loop = spawnSync(process.execPath, ['--import', 'tsx', REPLAY_LOOP, tapeFile, '3000'], {
        encoding: 'utf8',
      });
      if (loop.status !== 0) throw new Error(`bench/replayLoop.ts failed: ${loop.stderr}`);
      const replayMs = (JSON.parse(loop.stdout) as { perReplayMs: number }).perReplayMs;
      const replayRuns = 2000;
      for (let i = 0; i < 200; i++) await replayTape(tapeFile, { agent: researchAgent as never, timeline });
      const t0 = performance.now();
      for (let i = 0; i < replayRuns; i++) {
        const r = await replayTape(tapeFile, { agent: researchAgent as never, timeline });
        if (r.status !== 'match') throw new Error(`replay diverged: ${JSON.stringify(r.divergence)}`);
      }
      const replayInBenchMs = (performance.now() - t0) / replayRuns;
      const withRead = median(
        await timeRuns(50, async () => {
          await replayTape(tapeFile, { agent: researchAgent as never });
        }),
      );

      // Peers: the same agent re-run with its recorded HTTP exchanges replayed. A fresh model server: the
      // worker's pooled keep-alive sockets to the first one may have been closed under it by now.
      await model.close();
      const peerModel = await startModelServer({ script: script() });
      closers.push(() => peerModel.close());
      const exchanges = await captureExchanges(peerModel.url);
      // Imported here, not at the top: nock intercepts every HTTP request of the process from the moment it
      // loads, and bench/run.ts loads every suite, so a top-level import slowed the other suites' model calls.
      const { default: nock } = await import('nock');
      const nockMs = median(
        await timeRuns(20, async () => {
          for (const e of exchanges) {
            const u = new URL(e.url);
            nock(u.origin).post(u.pathname).reply(e.status, e.body, e.headers);
          }
          await runDirect(peerModel.url);
          if (!nock.isDone()) throw new Error('nock: not every recorded exchange was replayed');
          nock.cleanAll();
        }),
      );
      nock.restore();

      Polly.register(FetchAdapter);
      Polly.register(FSPersister);
      const recordings = path.join(tapeDir, 'polly');
      const pollyOptions: PollyConfig = {
        adapters: ['fetch'],
        persister: 'fs',
        persisterOptions: { fs: { recordingsDir: recordings } },
        matchRequestsBy: { headers: false, order: true },
        logLevel: 'silent',
      };
      peerModel.loadScript(script());
      const recorder = new Polly('replay-bench', { ...pollyOptions, mode: 'record' });
      await runDirect(peerModel.url);
      await recorder.stop();
      await peerModel.close(); // from here on a request that is not replayed fails
      const pollyMs = median(
        await timeRuns(10, async () => {
          const polly = new Polly('replay-bench', {
            ...pollyOptions,
            mode: 'replay',
            recordIfMissing: false,
          });
          try {
            await runDirect(peerModel.url);
          } finally {
            await polly.stop();
          }
        }),
      );

      // Temporal's replayer on the same run's history (bundle prepared, as for a warm replayer). Payloads past the
      // threshold are claims in the history: it reads them from the content store the worker wrote them to.
      const dataConverter = jukeboxDataConverter({ store: contentStoreFor() });
      const { history } = loadStoredHistory(tapeFile);
      const temporalMs = median(
        await timeRuns(5, async () => {
          await Worker.runReplayHistory(
            { workflowBundle, dataConverter },
            history,
            timeline.tape.header.workflowId,
          );
        }),
      );

      // The accounting quickstart's runs, with their commit steps, beside the research agent's tape.
      const [committedTape, refusedTape] = await recordQuickstartTapes({
        connection,
        nativeConnection,
        namespace: config.namespace,
        workflowBundle,
        dir: path.join(tapeDir, 'quickstart'),
      });
      const booth = [
        { label: 'committed $120 refund', tape: committedTape! },
        { label: 'gate-refused $750 refund', tape: refusedTape! },
      ].map((b) => {
        const loop = replayLoopMs(REPLAY_LOOP, b.tape, 3000);
        const { history } = loadStoredHistory(b.tape);
        const workflowId = readTimeline(b.tape).tape.header.workflowId;
        return { ...b, ...loop, history, workflowId, events: historyEvents(b.tape) };
      });
      const boothTemporal: number[] = [];
      for (const b of booth)
        boothTemporal.push(
          median(
            await timeRuns(5, async () => {
              await Worker.runReplayHistory({ workflowBundle, dataConverter }, b.history, b.workflowId);
            }),
          ),
        );

      // A folder of the quickstart's tapes: one jbx replay DIR process against one jbx replay TAPE process each.
      const folder = tapeFolder([committedTape!, refusedTape!], FOLDER_TAPES, path.join(tapeDir, 'folder'));
      const singleMs = medianOf(SINGLE_PROCESSES, () => jbxOnce(BIN, ['replay', committedTape!, '--json']));
      const folderMs = jbxOnce(BIN, ['replay', folder, '--json']);

      // The CLI as a user runs it: the compiled package, one whole process per command (the cli suite times
      // `jbx --help` and `jbx replay` against Node's own start-up and says where their time goes). With no option,
      // `jbx replay` runs the workflow code that recorded the run (kept by hash beside the tape); --against
      // replays the project's current code, which it bundles first to compare that code's hash with the tape's.
      const jbxMs = processMs(['replay', tapeFile, '--json'], 5);
      const jbxCheckedMs = processMs(['replay', tapeFile, '--against', ROOT, '--json'], 2);
      const jbxTemporalMs = processMs(['replay', '--temporal', tapeFile, '--json'], 2);

      return [
        result(
          `in-process replay, ${steps}-step tape`,
          replayMs,
          'ms',
          'Polly.js replaying the same run’s HTTP',
          pollyMs,
          `${exchanges.length} exchanges; target <= 0.1 ms, ratio <= 0.05`,
        ),
        result(
          `in-process replay, ${steps}-step tape`,
          replayMs,
          'ms',
          'nock replaying the same run’s HTTP',
          nockMs,
          'target ratio <= 0.05',
        ),
        result(
          'in-process replay, per step',
          replayMs / steps,
          'ms',
          'Polly.js, per recorded HTTP exchange',
          pollyMs / exchanges.length,
          'target <= 0.1 ms',
        ),
        result(
          `in-process replay, ${steps}-step tape`,
          replayMs,
          'ms',
          'Worker.runReplayHistory, same run',
          temporalMs,
        ),
        result(
          `in-process replay, ${steps}-step tape, inside the bench process`,
          replayInBenchMs,
          'ms',
          'the same in a process that only replays',
          replayMs,
          'a heap shared with a Temporal worker and HTTP peers',
        ),
        result(
          `in-process replay incl. reading the tape`,
          withRead,
          'ms',
          'Worker.runReplayHistory, same run',
          temporalMs,
        ),
        result(
          `jbx replay process, ${steps}-step tape (the run's stored code)`,
          jbxMs,
          'ms',
          'jbx replay --temporal process',
          jbxTemporalMs,
          'target <= 300 ms (the cli suite: its load average and floor)',
        ),
        result(
          'jbx replay --against the project process (bundles it for the code-hash check)',
          jbxCheckedMs,
          'ms',
          'jbx replay --temporal process',
          jbxTemporalMs,
        ),
        ...booth.flatMap((b, i) => [
          result(
            `in-process replay, quickstart ${b.label} (${b.steps} steps, commit step included)`,
            b.perReplayMs,
            'ms',
            'Worker.runReplayHistory, same run',
            boothTemporal[i]!,
            `${b.events} history events`,
          ),
          result(
            `in-process replay per step, quickstart ${b.label}`,
            b.perReplayMs / b.steps,
            'ms',
            `the research agent's ${steps}-step tape, per step`,
            replayMs / steps,
            'a commit step is several activities on the tape, answered as one step',
          ),
        ]),
        result(
          `jbx replay DIR: ${FOLDER_TAPES} quickstart tapes, one process`,
          folderMs,
          'ms',
          `one jbx replay TAPE process per tape (${FOLDER_TAPES} x the median of ${SINGLE_PROCESSES})`,
          singleMs * FOLDER_TAPES,
          `worker threads: ${os.availableParallelism()}; per tape ${(folderMs / FOLDER_TAPES).toFixed(1)} ms vs ${singleMs.toFixed(0)} ms`,
        ),
        result(
          `fork at step ${FORK_AT} of ${steps}, to completion`,
          measured.forkMs,
          'ms',
          `re-running the run live (${FORK_AT} steps + the rest)`,
          measured.liveMs,
          'local model server: no model latency',
        ),
      ];
    } finally {
      await connection.close();
      await nativeConnection.close();
      await model.close().catch(() => {});
      for (const close of closers) await close().catch(() => {});
      rmSync(tapeDir, { recursive: true, force: true });
    }
  },
};
