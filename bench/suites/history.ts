/**
 * Runs of any length (docs/long-runs.md): what a long agent run costs in Temporal history, against the same agent
 * written the plain Temporal way (the conversation as the model activity's input), in one process against one
 * dev server.
 *
 *   (a) 150 steps of 8 KB pages: history bytes and whether each run completed.
 *   (b) history bytes per step at 10, 100 and 1,000 steps.
 *   (c) one long run to completion (10,000 steps by default): wall time, history bytes per segment (the run
 *       continues as new on its own), tape bytes, offline replay time of the whole run.
 *   (d) step latency of the e2e suite's 20-step sample run with the content store on and off, interleaved.
 *
 * Sizes: JUKEBOX_BENCH_HISTORY_PAGES (a, default 150), JUKEBOX_BENCH_HISTORY_SIZES (b, default 10,100,1000),
 * JUKEBOX_BENCH_LONG_STEPS (c, default 10000), JUKEBOX_BENCH_HISTORY_E2E_RUNS (d, default 7). A smaller (c) prints the measured per-step cost and what it
 * comes to at 10,000 steps.
 */
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { type PageOutput, pageAgent } from '../../examples/pages/agent';
import { pageScript } from '../../examples/pages/pageScript';
import { pageTool } from '../../examples/pages/tools';
import { stepScript } from '../../examples/sample/stepScript';
import { researchTools } from '../../examples/sample/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { localEndpoints } from '../../src/llm';
import { tapeFileName } from '../../src/recorder';
import { ContentTimings, FolderContentStore } from '../../src/recorder/content';
import {
  bundleAgentWorkflows,
  createJukeboxWorker,
  LATENCY_WORKER_OPTIONS,
  startAgent,
} from '../../src/temporal';
import { startModelServer } from '../../src/testing/modelserver';
import { readTimeline, replayTape } from '../../src/timetravel/replay';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { EXAMPLE_WORKFLOWS_PATH } from '../paths';
import { PLAIN_WORKFLOWS_PATH, plainPageActivities } from '../plain';

const PAGE_BYTES = 8 * 1024;
const silent = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
const History = temporal.api.history.v1.History;
/** As the e2e suite: the breaker on, with a spend velocity the scripted model's instant answers cannot reach. */
const BENCH_BREAKER = { velocity: { maxOutputTokensPerMinute: 1e9, maxUsdPerMinute: 1e9 } };

const envInt = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
};

/** Every execution of a run, first to last, with its history's size as the server encodes it. */
async function chainOf(client: Client, workflowId: string, firstRunId: string) {
  const out: { runId: string; events: number; bytes: number; status: string }[] = [];
  for (let runId: string | undefined = firstRunId; runId; ) {
    const history: temporal.api.history.v1.IHistory = await client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const last = history.events?.at(-1);
    const next: string | undefined =
      last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId || undefined;
    const type = temporal.api.enums.v1.EventType[Number(last?.eventType)] ?? 'unknown';
    out.push({
      runId,
      events: history.events?.length ?? 0,
      bytes: History.encode(History.fromObject(history)).finish().length,
      status: type.replace('EVENT_TYPE_WORKFLOW_EXECUTION_', ''),
    });
    runId = next;
  }
  return out;
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    const s = statSync(path.join(dir, f));
    if (s.isFile()) n += s.size;
  }
  return n;
}

const firstRunOf = (h: WorkflowHandle) =>
  (h as unknown as { firstExecutionRunId: string }).firstExecutionRunId;
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

export const historySuite: BenchSuite = {
  name: 'history',
  breaker:
    'off (breaker: false) for the runs of 8 KB pages; on, with spend velocity raised as in the e2e suite, for the other runs',
  async run() {
    const pages = envInt('JUKEBOX_BENCH_HISTORY_PAGES', 150);
    const sizes = (process.env.JUKEBOX_BENCH_HISTORY_SIZES ?? '10,100,1000').split(',').map(Number);
    const longSteps = envInt('JUKEBOX_BENCH_LONG_STEPS', 10_000);
    const e2eRuns = envInt('JUKEBOX_BENCH_HISTORY_E2E_RUNS', 7);
    const config = temporalConfigFromEnv();
    await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
    const model = await startModelServer({ script: pageScript(2) });
    const connection = await NativeConnection.connect({ address: config.address });
    const client = new Client({ connection, namespace: config.namespace });
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-history-'));
    const contentDir = process.env.JUKEBOX_CONTENT_DIR!;
    const stamp = Date.now().toString(36);
    const out: BenchResult[] = [];
    const say = (m: string) => process.stderr.write(`  history: ${m}\n`);
    try {
      // What the content store spends, counted for (d): the store's writes and disk waits, the driver's calls.
      const onTimings = new ContentTimings();
      const nosyncTimings = new ContentTimings();
      const agentQueue = `bench-history-${stamp}`;
      const plainQueue = `bench-history-plain-${stamp}`;
      const workflowBundle = await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH);
      const agentWorker = await createJukeboxWorker({
        connection,
        namespace: config.namespace,
        taskQueue: agentQueue,
        endpoints: localEndpoints(model.url),
        tools: [pageTool(PAGE_BYTES), ...researchTools],
        workflowBundle,
        tape: { dir: tapeDir },
        // The default store (the folder JUKEBOX_CONTENT_DIR names, durable), with counters.
        content: {
          store: new FolderContentStore(contentDir, { timings: onTimings }),
          timings: onTimings,
        },
      });
      // The same worker with the content store off: every payload stays in the history, as before it existed.
      const inlineQueue = `bench-history-inline-${stamp}`;
      const inlineWorker = await createJukeboxWorker({
        connection,
        namespace: config.namespace,
        taskQueue: inlineQueue,
        endpoints: localEndpoints(model.url),
        tools: researchTools,
        workflowBundle,
        tape: { dir: tapeDir },
        content: {
          payloadSizeThreshold: Number.MAX_SAFE_INTEGER,
          largePayloadThreshold: Number.MAX_SAFE_INTEGER,
        },
      });
      // The content store on without its fsyncs (fdatasync of each new blob, fsync of the folder per batch): what
      // of (d)'s cost is durability, which a reference in the history needs before the history holds it.
      const nosyncQueue = `bench-history-nosync-${stamp}`;
      const nosyncWorker = await createJukeboxWorker({
        connection,
        namespace: config.namespace,
        taskQueue: nosyncQueue,
        endpoints: localEndpoints(model.url),
        tools: researchTools,
        workflowBundle,
        tape: { dir: tapeDir },
        content: {
          store: new FolderContentStore(contentDir, { durable: false, timings: nosyncTimings }),
          timings: nosyncTimings,
        },
      });
      const plainWorker = await Worker.create({
        connection,
        namespace: config.namespace,
        taskQueue: plainQueue,
        workflowBundle: await bundleWorkflowCode({ workflowsPath: PLAIN_WORKFLOWS_PATH, logger: silent }),
        activities: plainPageActivities(localEndpoints(model.url), PAGE_BYTES),
        ...LATENCY_WORKER_OPTIONS,
      });

      const runPages = async (n: number, runOptions: Record<string, unknown>, window?: number) => {
        model.loadScript(pageScript(n));
        const contentBefore = dirBytes(contentDir);
        const t0 = performance.now();
        const handle = await startAgent<unknown, PageOutput>(
          'pageAgent',
          { pages: n, ...(window ? { window } : {}) },
          { connection, namespace: config.namespace, taskQueue: agentQueue, runOptions },
        );
        const r = await handle.result();
        const ms = performance.now() - t0;
        const chain = await chainOf(client, handle.workflowId, firstRunOf(handle));
        const tapeFile = path.join(tapeDir, tapeFileName(handle.workflowId, firstRunOf(handle)));
        return {
          handle,
          output: r.output,
          steps: r.steps.length,
          ms,
          chain,
          tapeFile,
          tapeBytes: statSync(tapeFile).size,
          contentBytes: dirBytes(contentDir) - contentBefore,
        };
      };

      await plainWorker.runUntil(() =>
        nosyncWorker.runUntil(() =>
          inlineWorker.runUntil(() =>
            agentWorker.runUntil(async () => {
              // (a) The reported shape: 150 turns (a model step and its 8 KB page each), the whole conversation sent
              // at every model step; its 150th request holds ~1.2 MB (~225k tokens).
              const aSteps = pages * 2 + 1;
              say(`(a) ${pages} turns (${aSteps} steps) of 8 KB pages, Jukebox then plain Temporal`);
              const j = await runPages(pages, { breaker: false });
              const jHistory = j.chain.reduce((n, s) => n + s.bytes, 0);
              model.loadScript(pageScript(pages));
              const plain = await client.workflow.start('plainPageAgent', {
                taskQueue: plainQueue,
                workflowId: `plain-pages-${stamp}`,
                args: [pages],
              });
              const plainOutcome = await plain.result().then(
                () => 'COMPLETED',
                (err: Error) => `not completed (${(err.cause as Error | undefined)?.message ?? err.message})`,
              );
              const plainChain = await chainOf(client, plain.workflowId, plain.firstExecutionRunId);
              const plainEvents = (await plain.fetchHistory()).events ?? [];
              // Its steps as Jukebox counts them: activities completed (a model call, a page read).
              const plainSteps = plainEvents.filter((e) => e.activityTaskCompletedEventAttributes).length;
              const plainBytes = plainChain[0]!.bytes;
              say(
                `(a) jukebox: ${j.chain.at(-1)!.status} after ${j.steps} steps, history ${mb(jHistory)}, tape ${mb(j.tapeBytes)}, content store +${mb(j.contentBytes)}; ` +
                  `plain: ${plainChain[0]!.status} (${plainOutcome}) after ${plainSteps} of ${aSteps} steps, history ${mb(plainBytes)}`,
              );
              out.push(
                result(
                  `(a) ${pages} turns (${aSteps} steps), 8 KB pages: history bytes (jukebox ${j.chain.at(-1)!.status}, ${j.steps} steps; plain ${plainChain[0]!.status}, ${plainSteps} steps)`,
                  jHistory,
                  'bytes',
                  'plain Temporal, conversation as activity input',
                  plainBytes,
                  `jukebox tape ${j.tapeBytes} bytes, content store +${j.contentBytes} bytes; plain: ${plainOutcome}`,
                ),
                result(
                  `(a) history bytes per step`,
                  jHistory / j.steps,
                  'bytes',
                  'plain Temporal, per step it completed',
                  plainBytes / Math.max(1, plainSteps),
                  'target: jukebox <= 2048 bytes a step',
                ),
                result(`(a) tape bytes`, j.tapeBytes, 'bytes', 'its own history bytes', jHistory),
              );

              // (b) History per step as the run grows, the conversation growing 8 KB a step with it.
              for (const steps of sizes) {
                const n = Math.max(1, Math.round((steps - 1) / 2));
                const r = await runPages(n, { breaker: false });
                const bytes = r.chain.reduce((x, s) => x + s.bytes, 0);
                say(
                  `(b) ${r.steps} steps: ${bytes} history bytes in ${r.chain.length} execution(s), ${(bytes / r.steps).toFixed(0)} a step`,
                );
                out.push(
                  result(
                    `(b) history bytes per step at ${r.steps} steps`,
                    bytes / r.steps,
                    'bytes',
                    'target',
                    2048,
                    `${r.chain.length} execution(s), ${bytes} bytes in all, tape ${r.tapeBytes} bytes`,
                  ),
                );
              }

              // (c) One long run to completion, continuing as new when Temporal suggests it. The model sees the last
              // 10 turns (a long-running agent bounds its context; the whole conversation of 10,000 steps is
              // 40 MB a request), 8 KB pages as before.
              const n = Math.max(1, Math.round((longSteps - 1) / 2));
              say(`(c) a ${n * 2 + 1}-step run (this takes a while)`);
              const c = await runPages(n, { breaker: false }, 10);
              const cHistory = c.chain.reduce((x, s) => x + s.bytes, 0);
              const t0 = performance.now();
              const timeline = readTimeline(c.tapeFile);
              const replay = await replayTape(c.tapeFile, { agent: pageAgent as never, timeline });
              const replayMs = performance.now() - t0;
              const perSeg = c.chain.map((s) => s.bytes);
              say(
                `(c) ${c.steps} steps, ${c.chain.at(-1)!.status} in ${(c.ms / 1000).toFixed(1)} s over ${c.chain.length} executions ` +
                  `(history bytes per execution ${perSeg.join(', ')}; events ${c.chain.map((s) => s.events).join(', ')}); ` +
                  `tape ${c.tapeBytes} bytes; offline replay ${replay.status} in ${replayMs.toFixed(0)} ms`,
              );
              const note = `${c.chain.length} executions, ${c.chain.at(-1)!.status}`;
              out.push(
                result(`(c) ${c.steps}-step run: wall time`, c.ms / 1000, 's', '', null, note),
                result(`(c) ${c.steps}-step run: wall time per step`, c.ms / c.steps, 'ms', '', null, note),
                result(
                  `(c) ${c.steps}-step run: history bytes per execution (largest)`,
                  Math.max(...perSeg),
                  'bytes',
                  'Temporal limit 50 MB',
                  50 * 1024 * 1024,
                  `per execution: ${perSeg.join(', ')}`,
                ),
                result(
                  `(c) ${c.steps}-step run: history bytes, all executions`,
                  cHistory,
                  'bytes',
                  '',
                  null,
                  note,
                ),
                result(
                  `(c) ${c.steps}-step run: tape bytes`,
                  c.tapeBytes,
                  'bytes',
                  'its history bytes',
                  cHistory,
                  `content store +${c.contentBytes} bytes`,
                ),
                result(
                  `(c) ${c.steps}-step run: offline replay of the whole run`,
                  replayMs,
                  'ms',
                  '',
                  null,
                  `replay ${replay.status}, ${timeline.steps.length} steps`,
                ),
              );
              if (c.steps < 10_000) {
                const perStep = c.ms / c.steps;
                const replayPerStep = replayMs / c.steps;
                say(
                  `(c) measured ${c.steps} steps, not 10,000: ${perStep.toFixed(1)} ms a step live and ${replayPerStep.toFixed(2)} ms a step replayed, ` +
                    `so 10,000 steps come to about ${((perStep * 10_000) / 1000).toFixed(0)} s live and ${((replayPerStep * 10_000) / 1000).toFixed(1)} s replayed (extrapolated, not measured)`,
                );
                out.push(
                  result(
                    '(c) 10,000-step run: wall time, EXTRAPOLATED from the measured per-step cost',
                    (perStep * 10_000) / 1000,
                    's',
                    '',
                    null,
                    `measured at ${c.steps} steps (JUKEBOX_BENCH_LONG_STEPS)`,
                  ),
                );
              }

              // (d) The e2e suite's 20-step sample run, content store on and off, interleaved: what references cost.
              const input = { question: 'Walk the knowledge base.', maxTurns: 22 };
              const stepsOf = new Map<string, number>();
              const sample = async (taskQueue: string) => {
                model.loadScript(stepScript(20));
                const t = performance.now();
                const h = await startAgent('researchAgent', input, {
                  connection,
                  namespace: config.namespace,
                  taskQueue,
                  runOptions: { breaker: BENCH_BREAKER },
                });
                const r = await h.result();
                stepsOf.set(taskQueue, (stepsOf.get(taskQueue) ?? 0) + r.steps.length);
                return (performance.now() - t) / r.steps.length;
              };
              await sample(agentQueue);
              await sample(inlineQueue);
              await sample(nosyncQueue);
              stepsOf.clear();
              const onBefore = { ...onTimings };
              const nosyncBefore = { ...nosyncTimings };
              const on: number[] = [];
              const off: number[] = [];
              const nosync: number[] = [];
              for (let i = 0; i < e2eRuns; i++) {
                on.push(await sample(agentQueue));
                off.push(await sample(inlineQueue));
                nosync.push(await sample(nosyncQueue));
              }
              const list = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');
              say(
                `(d) ms a step, content store on ${list(on)}; off ${list(off)}; on without fsyncs ${list(nosync)}`,
              );
              // The bound: what the store and its driver spent a step, against the measured difference.
              const perStep = (now: ContentTimings, before: ContentTimings, steps: number) => {
                const d = (k: keyof ContentTimings) => (now[k] - before[k]) / steps;
                return {
                  payloads: d('payloadsStored'),
                  payloadKb: d('payloadBytesStored') / 1024,
                  blobs: d('blobsWritten'),
                  blobKb: d('bytesWritten') / 1024,
                  storeMs: d('storeMs'),
                  retrieveMs: d('retrieveMs'),
                  diskWaits: d('diskWaits'),
                  diskWaitMs: d('diskWaitMs'),
                };
              };
              const onStep = perStep(onTimings, onBefore as ContentTimings, stepsOf.get(agentQueue)!);
              const nsStep = perStep(
                nosyncTimings,
                nosyncBefore as ContentTimings,
                stepsOf.get(nosyncQueue)!,
              );
              const costMs = onStep.storeMs + onStep.retrieveMs;
              const measuredMs = median(on) - median(off);
              say(
                `(d) the content store a step: ${onStep.payloads.toFixed(2)} payloads stored (${onStep.payloadKb.toFixed(1)} KB), ` +
                  `${onStep.blobs.toFixed(2)} new blobs written (${onStep.blobKb.toFixed(1)} KB); the SDK waited ${onStep.storeMs.toFixed(2)} ms on store ` +
                  `and ${onStep.retrieveMs.toFixed(2)} ms on retrieve; ${onStep.diskWaits.toFixed(2)} disk waits (fsync of new blobs with their folder; ` +
                  `a step result's runs alongside the tape's) took ${onStep.diskWaitMs.toFixed(2)} ms; without fsyncs store ${nsStep.storeMs.toFixed(2)} ms, ` +
                  `retrieve ${nsStep.retrieveMs.toFixed(2)} ms (splitting, hashing, writing, joining); measured on - off ${measuredMs.toFixed(2)} ms a step`,
              );
              out.push(
                result(
                  '(d) e2e sample run: ms a step the SDK waited on the content store (store + retrieve), durable',
                  costMs,
                  'ms',
                  'same, without fsyncs',
                  nsStep.storeMs + nsStep.retrieveMs,
                  `${onStep.payloads.toFixed(2)} payloads (${onStep.payloadKb.toFixed(1)} KB) stored and ${onStep.blobs.toFixed(2)} new blobs (${onStep.blobKb.toFixed(1)} KB) written a step; ` +
                    `${onStep.diskWaits.toFixed(2)} disk waits a step, ${onStep.diskWaitMs.toFixed(2)} ms; measured on - off: ${measuredMs.toFixed(2)} ms`,
                ),
              );
              out.push(
                result(
                  '(d) e2e sample run: ms a step, content store on without its fsyncs (the bound)',
                  median(nosync),
                  'ms',
                  'content store off',
                  median(off),
                  'what of the cost is the durability of each new blob before its reference enters the history',
                ),
              );
              out.push(
                result(
                  '(d) e2e sample run: ms a step, content store on',
                  median(on),
                  'ms',
                  'content store off (target ratio <= 1.05)',
                  median(off),
                  `median of ${e2eRuns} interleaved runs of the e2e suite’s 20-step sample run`,
                ),
              );
            }),
          ),
        ),
      );
    } finally {
      await connection.close();
      await model.close();
    }
    return out;
  },
};
