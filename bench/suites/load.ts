import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, type WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { stepScript } from '../../examples/sample/stepScript';
import { researchTools } from '../../examples/sample/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { localEndpoints } from '../../src/llm';
import { FolderTapeStore } from '../../src/recorder';
import {
  bundleAgentWorkflows,
  createJukeboxWorker,
  LATENCY_WORKER_OPTIONS,
  startAgent,
} from '../../src/temporal';
import { EXAMPLE_WORKFLOWS_PATH } from '../examples';
import { FLOOR_WORKFLOWS_PATH, floorActivities } from '../floor';
import { type BenchResult, type BenchSuite, result } from '../harness';

/** Tool-calling model turns per run; with the answering turn, 11 model steps and 10 tool steps. */
const STEPS = 10;
const ACTIVITIES = 2 * STEPS + 1;
/** Concurrent runs per level: `JUKEBOX_BENCH_LOAD_LEVELS=10,50` for a quick look. */
const LEVELS = (process.env.JUKEBOX_BENCH_LOAD_LEVELS ?? '10,100,500')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);

/**
 * The Temporal worker options that decide how many runs one worker moves at once, the same on both sides and
 * printed with the results. Slots: the SDK's defaults. The sticky cache holds every run of the largest level, so
 * no run is evicted and replayed from its history mid-level (a cache smaller than the concurrency measures
 * replays, not steps).
 */
export const LOAD_WORKER_OPTIONS = {
  ...LATENCY_WORKER_OPTIONS,
  maxConcurrentActivityTaskExecutions: 100,
  maxConcurrentWorkflowTaskExecutions: 40,
  maxConcurrentLocalActivityExecutions: 100,
  maxCachedWorkflows: Math.max(1000, 2 * Math.max(...LEVELS)),
} satisfies Partial<WorkerOptions>;
/** The tape store's writer budget (its default): at 100 and 500 runs, far fewer writers than runs. */
const MAX_OPEN_TAPES = 32;

const silent = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

interface Side {
  completed: number;
  failures: string[];
  wallMs: number;
  stepsPerSecond: number;
  /** ActivityTaskScheduled -> ActivityTaskCompleted of every step, from the histories. */
  stepMs: number[];
  peakFds: number;
  peakTapeFiles: number;
  peakRssMiB: number;
  loadAverage: number;
  /** CPU time per step of the worker process (all its threads) and of the Temporal server, in ms. */
  workerCpuMsPerStep: number;
  serverCpuMsPerStep: number;
  /** History events per run. */
  eventsPerRun: number;
}

/** Open descriptors of this process (the worker, its client, the model server), and how many are tapes. */
function openFiles(): { all: number; tapes: number } {
  let all = 0;
  let tapes = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    all++;
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).endsWith('.jbx')) tapes++;
    } catch {
      // Closed between the listing and the readlink.
    }
  }
  return { all, tapes };
}

interface ModelProcess {
  url: string;
  pid: number;
  requests(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The scripted model server in a process of its own, as a real model is: its CPU, sockets and memory are not
 * counted as the worker's (they would be in the bench's own process).
 */
async function startModelProcess(scriptFile: string): Promise<ModelProcess> {
  const root = path.join(__dirname, '../..');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'src/testing/modelserver/main.ts'), '--script', scriptFile],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the model server exited (code ${code}): ${out}`)));
  });
  const call = async (method: string, route: string) => {
    const res = await fetch(`${url}${route}`, { method });
    return (await res.json()) as { requests?: number };
  };
  return {
    url,
    pid: child.pid!,
    requests: async () => Number((await call('GET', '/_jukebox/stats')).requests),
    reset: async () => {
      await call('POST', '/_jukebox/reset');
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The Temporal dev server's process on this host serving `port`, found by its command line. */
function serverPid(port: number): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (args.includes('start-dev') && args[args.indexOf('--port') + 1] === String(port)) return Number(d);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined;
}

/** CPU time (user + system, all threads) a process has used, in ms; 0 when it cannot be read. */
function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime: fields 14 and 15 of stat, in clock ticks (100 a second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

function eventMs(e: HistoryEvent): number {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;
}

/** Each activity's schedule-to-close in one history. */
function stepLatencies(events: readonly HistoryEvent[]): number[] {
  const scheduled = new Map<string, number>();
  const out: number[] = [];
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes) scheduled.set(String(e.eventId), eventMs(e));
    const done = e.activityTaskCompletedEventAttributes;
    if (done) {
      const at = scheduled.get(String(done.scheduledEventId));
      if (at !== undefined) out.push(eventMs(e) - at);
    }
  }
  return out;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size)
    out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

/** Starts `runs` workflows at once, waits for all of them, and measures the worker process meanwhile. */
async function measure(
  runs: number,
  server: number | undefined,
  start: (i: number) => Promise<WorkflowHandle>,
): Promise<Side> {
  let peakFds = 0;
  let peakTapeFiles = 0;
  let peakRss = 0;
  const sample = () => {
    const f = openFiles();
    peakFds = Math.max(peakFds, f.all);
    peakTapeFiles = Math.max(peakTapeFiles, f.tapes);
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  };
  const sampler = setInterval(sample, 200);
  const cpu0 = process.cpuUsage();
  const server0 = processCpuMs(server);
  const t0 = performance.now();
  let handles: WorkflowHandle[];
  let outcomes: PromiseSettledResult<unknown>[];
  try {
    handles = await Promise.all(Array.from({ length: runs }, (_, i) => start(i)));
    outcomes = await Promise.allSettled(handles.map((h) => h.result()));
  } finally {
    clearInterval(sampler);
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const serverCpuMs = processCpuMs(server) - server0;
  sample();
  const failures = outcomes.flatMap((o) =>
    o.status === 'rejected' ? [String((o.reason as Error)?.cause ?? o.reason)] : [],
  );
  const histories = await inBatches(handles, 25, async (h) => (await h.fetchHistory()).events ?? []);
  const stepMs = histories.flatMap(stepLatencies).sort((a, b) => a - b);
  const steps = Math.max(1, stepMs.length);
  return {
    workerCpuMsPerStep: (cpu.user + cpu.system) / 1000 / steps,
    serverCpuMsPerStep: serverCpuMs / steps,
    eventsPerRun: histories.reduce((n, h) => n + h.length, 0) / runs,
    completed: runs - failures.length,
    failures,
    wallMs,
    stepsPerSecond: (stepMs.length / wallMs) * 1000,
    stepMs,
    peakFds,
    peakTapeFiles,
    peakRssMiB: peakRss / 2 ** 20,
    loadAverage: os.loadavg()[0]!,
  };
}

function describeSide(name: string, runs: number, s: Side): string {
  return (
    `${name.padEnd(8)} ${String(runs).padStart(4)} runs: ${s.completed} completed in ${(s.wallMs / 1000).toFixed(1)} s, ` +
    `${s.stepsPerSecond.toFixed(1)} steps/s, step p50 ${percentile(s.stepMs, 50).toFixed(0)} ms ` +
    `p99 ${percentile(s.stepMs, 99).toFixed(0)} ms, peak ${s.peakFds} fds (${s.peakTapeFiles} tapes), ` +
    `peak RSS ${s.peakRssMiB.toFixed(0)} MiB, load ${s.loadAverage.toFixed(1)}; per step CPU: worker ` +
    `${s.workerCpuMsPerStep.toFixed(2)} ms, server ${s.serverCpuMsPerStep.toFixed(2)} ms; ${s.eventsPerRun.toFixed(0)} events a run` +
    (s.failures.length ? `\n  lost: ${[...new Set(s.failures)].slice(0, 3).join('\n  lost: ')}` : '')
  );
}

/**
 * Many concurrent runs of one worker: the sample agent's 10-step tool loop (recording on, fsync per step, breaker
 * off, tape writers capped at maxOpenTapes) against the floor, a bare Temporal workflow of as many no-op
 * activities run one after another, at the same concurrency on the same dev server with the same worker
 * options, level by level in the same process. The figures: runs completed (and lost), steps per second over the
 * level's wall time, each step's schedule-to-close from the histories (p50, p99), the process's peak open files
 * (and tape files) and RSS.
 */
export const loadSuite: BenchSuite = {
  name: 'load',
  async run() {
    const config = temporalConfigFromEnv();
    await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-load-'));
    const scriptFile = path.join(scratch, 'script.json');
    writeFileSync(scriptFile, JSON.stringify(stepScript(STEPS)));
    const model = await startModelProcess(scriptFile);
    const connection = await NativeConnection.connect({ address: config.address });
    const client = new Client({ connection, namespace: config.namespace });
    const stamp = Date.now().toString(36);
    const server = serverPid(Number(config.address.split(':').pop()));
    const floorBundle = await bundleWorkflowCode({ workflowsPath: FLOOR_WORKFLOWS_PATH, logger: silent });
    const agentBundle = await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH);
    const results: BenchResult[] = [];
    process.stderr.write(
      `load: worker options on both sides: ${JSON.stringify(LOAD_WORKER_OPTIONS)}; Jukebox: maxOpenTapes ${MAX_OPEN_TAPES}, fsync 'step', breaker off\n`,
    );
    try {
      for (const runs of LEVELS) {
        const floorWorker = await Worker.create({
          connection,
          namespace: config.namespace,
          taskQueue: `bench-load-floor-${stamp}-${runs}`,
          workflowBundle: floorBundle,
          activities: floorActivities,
          ...LOAD_WORKER_OPTIONS,
        });
        const floor = await floorWorker.runUntil(() =>
          measure(runs, server, (i) =>
            client.workflow.start('floorWorkflow', {
              taskQueue: floorWorker.options.taskQueue,
              workflowId: `load-floor-${stamp}-${runs}-${i}`,
              args: [ACTIVITIES],
            }),
          ),
        );
        process.stderr.write(`${describeSide('floor', runs, floor)}\n`);

        const tapeDir = path.join(scratch, `tapes-${runs}`);
        const taskQueue = `bench-load-${stamp}-${runs}`;
        const store = new FolderTapeStore({ dir: tapeDir, maxOpenTapes: MAX_OPEN_TAPES });
        const agentWorker = await createJukeboxWorker({
          connection,
          namespace: config.namespace,
          taskQueue,
          endpoints: localEndpoints(model.url),
          tools: researchTools,
          workflowBundle: agentBundle,
          ...(process.env.LOADVARIANT === 'notape' ? { tape: false } : { tape: { dir: tapeDir, store } }),
          ...(process.env.LOADVARIANT === 'nocontent' || process.env.LOADVARIANT === 'notape'
            ? { content: { payloadSizeThreshold: 1e9, largePayloadThreshold: 1e9 } }
            : {}),
          workerOptions: LOAD_WORKER_OPTIONS,
        });
        await model.reset();
        const model0 = processCpuMs(model.pid);
        const agent = await agentWorker.runUntil(() =>
          measure(runs, server, () =>
            startAgent(
              'researchAgent',
              { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 },
              {
                connection,
                namespace: config.namespace,
                taskQueue,
                breaker: false,
              },
            ),
          ),
        );
        const requests = await model.requests();
        const modelCpuMsPerStep = (processCpuMs(model.pid) - model0) / Math.max(1, agent.stepMs.length);
        process.stderr.write(
          `${describeSide('jukebox', runs, agent)}\n` +
            `         model requests ${requests} (${runs * (STEPS + 1)} expected), tape writers open at most ${store.writers.peakOpen}, ` +
            `model server CPU ${modelCpuMsPerStep.toFixed(2)} ms a step (its own process)\n`,
        );
        await store.close();

        const note = `${runs} concurrent runs of ${ACTIVITIES} steps; load average ${agent.loadAverage.toFixed(1)}`;
        const floorNote = `floor: ${floor.completed}/${runs} runs, load average ${floor.loadAverage.toFixed(1)}`;
        results.push(
          result(
            `load ${runs}: runs completed (of ${runs})`,
            agent.completed,
            'runs',
            'floor',
            floor.completed,
            note,
          ),
          result(`load ${runs}: runs lost`, runs - agent.completed, 'runs', 'target', 0, note),
          result(
            `load ${runs}: steps per second`,
            agent.stepsPerSecond,
            'steps/s',
            runs === 100 ? 'floor (target ratio >= 0.8)' : 'floor',
            floor.stepsPerSecond,
            `${note}; ${floorNote}`,
          ),
          result(
            `load ${runs}: step latency p50`,
            percentile(agent.stepMs, 50),
            'ms',
            'floor',
            percentile(floor.stepMs, 50),
            note,
          ),
          result(
            `load ${runs}: step latency p99`,
            percentile(agent.stepMs, 99),
            'ms',
            'floor',
            percentile(floor.stepMs, 99),
            note,
          ),
          result(
            `load ${runs}: peak open files`,
            agent.peakFds,
            'fds',
            'floor',
            floor.peakFds,
            `${note}; tape files at most ${agent.peakTapeFiles} (maxOpenTapes ${MAX_OPEN_TAPES})`,
          ),
          result(`load ${runs}: peak RSS`, agent.peakRssMiB, 'MiB', 'floor', floor.peakRssMiB, note),
          result(`load ${runs}: model requests`, requests, 'requests', 'expected', runs * (STEPS + 1), note),
        );
      }
    } finally {
      await connection.close();
      await model.close();
      rmSync(scratch, { recursive: true, force: true });
    }
    return results;
  },
};
