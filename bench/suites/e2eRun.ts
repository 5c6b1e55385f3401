import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { researchAgent } from '../../examples/sample/agent';
import { stepScript } from '../../examples/sample/stepScript';
import { researchTools } from '../../examples/sample/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { ToolRegistry } from '../../src/agent/tools';
import { LlmClient, localEndpoints } from '../../src/llm';
import { RecorderTimings } from '../../src/recorder/timings';
import {
  bundleAgentWorkflows,
  createDirectContext,
  createJukeboxWorker,
  LATENCY_WORKER_OPTIONS,
  startAgent,
} from '../../src/temporal';
import { startModelServer } from '../../src/testing/modelserver';
import { SCRIPTED_MODEL_BREAKER, SCRIPTED_MODEL_BREAKER_NOTE } from '../breakers';
import { FLOOR_WORKFLOWS_PATH, floorActivities } from '../floor';
import { type BenchSuite, median, result } from '../harness';
import { breakdownHistory, meanBreakdown, type RunBreakdown } from '../historyBreakdown';
import { EXAMPLE_WORKFLOWS_PATH } from '../paths';

const STEPS = 20;
/** Model steps plus their tool steps: the activities of one sample run, and of the floor workflow. */
const ACTIVITIES = STEPS * 2 + 1;
const RUNS = 7;

/** The breaker stays on: its per-step work is part of what a Jukebox step costs (bench/breakers.ts). */
const BENCH_BREAKER = SCRIPTED_MODEL_BREAKER;

const silent = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };

/**
 * The same 20-model-step sample run three ways in one process against one dev server: a bare Temporal workflow
 * calling 41 no-op activities (the floor Temporal itself sets), the Jukebox agent on Temporal with recording and
 * the breaker on (and again with its tool steps as local activities, and with the breaker off), and the agent
 * in-process with no Temporal. Each
 * Temporal run's history is read back to split its time per step (docs/performance.md).
 */
export const e2eRunSuite: BenchSuite = {
  name: 'e2e',
  breaker: SCRIPTED_MODEL_BREAKER_NOTE + '; one row runs with the breaker off to price it',
  async run() {
    const config = temporalConfigFromEnv();
    await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
    const model = await startModelServer({ script: stepScript(STEPS) });
    const connection = await NativeConnection.connect({ address: config.address });
    // The client shares the workers' native connection: that is what lets a start be eager.
    const client = new Client({ connection, namespace: config.namespace });
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-e2e-'));
    const stamp = Date.now().toString(36);
    const timings = new RecorderTimings();
    try {
      const floorWorker = await Worker.create({
        connection,
        namespace: config.namespace,
        taskQueue: `bench-floor-${stamp}`,
        workflowBundle: await bundleWorkflowCode({ workflowsPath: FLOOR_WORKFLOWS_PATH, logger: silent }),
        activities: floorActivities,
        ...LATENCY_WORKER_OPTIONS,
      });
      const agentQueue = `bench-e2e-${stamp}`;
      const agentWorker = await createJukeboxWorker({
        connection,
        namespace: config.namespace,
        taskQueue: agentQueue,
        endpoints: localEndpoints(model.url),
        tools: researchTools,
        workflowBundle: await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH),
        tape: { dir: tapeDir, timings },
      });
      const input = { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 };
      const floor: Sample = { ms: [], breakdowns: [] };
      const agent: Sample = { ms: [], breakdowns: [] };
      const local: Sample = { ms: [], breakdowns: [] };
      const noBreaker: Sample = { ms: [], breakdowns: [] };
      let recorded = timings.snapshot();
      const timeRun = async (sample: Sample | undefined, start: () => Promise<WorkflowRun>) => {
        const t0 = performance.now();
        const handle = await start();
        await handle.result();
        const ms = performance.now() - t0;
        if (!sample) return;
        sample.ms.push(ms);
        sample.breakdowns.push(breakdownHistory((await handle.fetchHistory()).events ?? []));
      };
      const runFloor = (s?: Sample) =>
        timeRun(s, () =>
          client.workflow.start('floorWorkflow', {
            taskQueue: floorWorker.options.taskQueue,
            workflowId: `floor-${stamp}-${Math.random().toString(36).slice(2, 8)}`,
            args: [ACTIVITIES],
            requestEagerStart: true,
          }),
        );
      const runAgent = (
        s?: Sample,
        localTools?: string[],
        breaker: typeof BENCH_BREAKER | false = BENCH_BREAKER,
      ) =>
        timeRun(s, () => {
          // Reloading the script (in memory, microseconds) resets the model server's used-up turns between runs.
          model.loadScript(stepScript(STEPS));
          return startAgent('researchAgent', input, {
            connection,
            namespace: config.namespace,
            taskQueue: agentQueue,
            runOptions: { breaker, ...(localTools ? { localTools } : {}) },
          });
        });
      await floorWorker.runUntil(() =>
        agentWorker.runUntil(async () => {
          // Untimed warm-up of every path (caches, namespace state, the model server's connection).
          await runFloor();
          await runAgent();
          await runAgent(undefined, ['lookup_fact']);
          await runAgent(undefined, undefined, false);
          timings.reset();
          // Interleaved, so load from other processes on this machine falls on all three alike.
          for (let i = 0; i < RUNS; i++) {
            await runFloor(floor);
            const before = timings.snapshot();
            await runAgent(agent);
            recorded = addTimings(recorded, diffTimings(timings.snapshot(), before), i === 0);
            await runAgent(local, ['lookup_fact']);
            await runAgent(noBreaker, undefined, false);
          }
        }),
      );
      const direct = createDirectContext({
        llm: new LlmClient(localEndpoints(model.url)),
        tools: new ToolRegistry(researchTools),
      });
      const directMs: number[] = [];
      for (let i = 0; i <= RUNS; i++) {
        model.loadScript(stepScript(STEPS));
        const t0 = performance.now();
        await researchAgent.run(direct, input);
        if (i > 0) directMs.push(performance.now() - t0);
      }
      const f = median(floor.ms);
      const a = median(agent.ms);
      const l = median(local.ms);
      const nb = median(noBreaker.ms);
      const d = median(directMs);
      process.stderr.write(
        breakdownTable(
          [
            ['floor', meanBreakdown(floor.breakdowns)],
            ['jukebox', meanBreakdown(agent.breakdowns)],
            ['jukebox, local tools', meanBreakdown(local.breakdowns)],
            ['jukebox, no breaker', meanBreakdown(noBreaker.breakdowns)],
          ],
          recordedPerRun(recorded, RUNS),
        ),
      );
      const fb = meanBreakdown(floor.breakdowns);
      const ab = meanBreakdown(agent.breakdowns);
      const nbb = meanBreakdown(noBreaker.breakdowns);
      const rec = recordedPerRun(recorded, RUNS);
      const perActivity = (b: RunBreakdown, k: keyof RunBreakdown) => b[k] / Math.max(1, b.activities);
      const note = `median of ${RUNS} runs, ${ACTIVITIES} steps a run`;
      return [
        result(
          `floor: bare Temporal workflow, ${ACTIVITIES} no-op activities`,
          f,
          'ms',
          'target: 15 ms per activity',
          ACTIVITIES * 15,
          note,
        ),
        result('floor per activity', f / ACTIVITIES, 'ms', 'target', 15, note),
        result(
          `${STEPS}-step sample run on Temporal`,
          a,
          'ms',
          'the floor (target ratio <= 1.25, #34)',
          f,
          note,
        ),
        result(`${STEPS}-step sample run, tools as local activities`, l, 'ms', 'the floor', f, note),
        result(`${STEPS}-step sample run, breaker off`, nb, 'ms', 'the floor', f, note),
        result(
          `${STEPS}-step sample run on Temporal`,
          a,
          'ms',
          'same agent in-process, no Temporal',
          d,
          note,
        ),
        result(
          'overhead per step over in-process (llm or tool activity)',
          (a - d) / ACTIVITIES,
          'ms',
          'floor per activity',
          f / ACTIVITIES,
          note,
        ),
        // What the agent cannot do without, whatever Temporal or the recorder do: the floor, the agent's own work
        // (the in-process run) and the fsync that must finish before each step may complete.
        result(
          `${STEPS}-step run, lower bound: floor + in-process agent + its tape fsyncs`,
          f + d + rec.syncMs,
          'ms',
          'the floor',
          f,
          note,
        ),
        result(
          `the breaker in a ${STEPS}-step run (breaker on minus off)`,
          a - nb,
          'ms',
          'the floor',
          f,
          note,
        ),
        // The same difference from the histories' worker-side phases only: the on-minus-off of whole-run medians
        // above swings by tens of ms with other load on the machine.
        result(
          `the breaker in a ${STEPS}-step run, from the breakdown (start-to-close of activities and workflow tasks, on minus off)`,
          ab.activityStartToCloseMs +
            ab.workflowTaskStartToCloseMs -
            nbb.activityStartToCloseMs -
            nbb.workflowTaskStartToCloseMs,
          'ms',
          'the floor',
          f,
          note,
        ),
        result(
          'per step: activity schedule-to-start',
          perActivity(ab, 'activityScheduleToStartMs'),
          'ms',
          'floor',
          perActivity(fb, 'activityScheduleToStartMs'),
        ),
        result(
          'per step: activity start-to-close',
          perActivity(ab, 'activityStartToCloseMs'),
          'ms',
          'floor',
          perActivity(fb, 'activityStartToCloseMs'),
        ),
        result(
          'per step: workflow task schedule-to-start',
          perActivity(ab, 'workflowTaskScheduleToStartMs'),
          'ms',
          'floor',
          perActivity(fb, 'workflowTaskScheduleToStartMs'),
        ),
        result(
          'per step: workflow task start-to-close',
          perActivity(ab, 'workflowTaskStartToCloseMs'),
          'ms',
          'floor',
          perActivity(fb, 'workflowTaskStartToCloseMs'),
        ),
        result(
          'per step: recorder (interceptor and tape writes)',
          rec.recorderMs / Math.max(1, rec.activities),
          'ms',
          '-',
          null,
          `of which tape fsync ${(rec.syncMs / Math.max(1, rec.activities)).toFixed(2)} ms`,
        ),
      ];
    } finally {
      await connection.close();
      await model.close();
      rmSync(tapeDir, { recursive: true, force: true });
    }
  },
};

interface Sample {
  ms: number[];
  breakdowns: RunBreakdown[];
}

type WorkflowRun = {
  result(): Promise<unknown>;
  fetchHistory(): Promise<{ events?: Parameters<typeof breakdownHistory>[0] | null }>;
};

type Recorded = ReturnType<RecorderTimings['snapshot']>;

function diffTimings(after: Recorded, before: Recorded): Recorded {
  const out = { ...after };
  for (const k of Object.keys(out) as (keyof Recorded)[]) out[k] = after[k] - before[k];
  return out;
}

function addTimings(sum: Recorded, add: Recorded, first: boolean): Recorded {
  if (first) return add;
  const out = { ...sum };
  for (const k of Object.keys(out) as (keyof Recorded)[]) out[k] = sum[k] + add[k];
  return out;
}

function recordedPerRun(r: Recorded, runs: number): Recorded {
  const out = { ...r };
  for (const k of Object.keys(out) as (keyof Recorded)[]) out[k] = r[k] / runs;
  return out;
}

/** The per-step table the suite prints on stderr: server phases from the histories, recorder phases timed. */
function breakdownTable(rows: [string, RunBreakdown][], rec: Recorded): string {
  const f = (n: number) => n.toFixed(2).padStart(8);
  const lines = [
    '',
    'e2e per-step breakdown (mean per run; per-step figures divide by activity tasks, or by steps for local runs)',
    `${'run'.padEnd(22)}${'total'.padStart(9)}${'acts'.padStart(6)}${'local'.padStart(6)}${'eager'.padStart(6)}${'wft'.padStart(5)}` +
      `${'first'.padStart(8)}${'act s2s'.padStart(9)}${'act s2c'.padStart(9)}${'wft s2s'.padStart(9)}${'wft s2c'.padStart(9)}`,
  ];
  for (const [name, b] of rows) {
    const steps = Math.max(1, b.activities + b.localActivities);
    lines.push(
      `${name.padEnd(22)}${b.totalMs.toFixed(0).padStart(9)}${b.activities.toFixed(0).padStart(6)}` +
        `${b.localActivities.toFixed(0).padStart(6)}${b.eagerActivities.toFixed(0).padStart(6)}${b.workflowTasks.toFixed(0).padStart(5)}` +
        `${f(b.firstTaskMs)}${f(b.activityScheduleToStartMs / steps)}${f(b.activityStartToCloseMs / steps)}` +
        `${f(b.workflowTaskScheduleToStartMs / steps)}${f(b.workflowTaskStartToCloseMs / steps)}`,
    );
  }
  const per = (n: number) => (n / Math.max(1, rec.activities)).toFixed(3);
  lines.push(
    `recorder, per recorded activity of the jukebox run: interceptor ${per(rec.interceptorMs)} ms, ` +
      `of it the activity's own work ${per(rec.activityMs - (rec.recorderMs - (rec.interceptorMs - rec.activityMs)))} ms ` +
      `and recording ${per(rec.recorderMs)} ms; tape flushes ${(rec.flushes / Math.max(1, rec.activities)).toFixed(1)} ` +
      `taking ${per(rec.flushMs)} ms, fsyncs ${(rec.syncs / Math.max(1, rec.activities)).toFixed(2)} taking ${per(rec.syncMs)} ms`,
    '',
  );
  return `${lines.join('\n')}\n`;
}
