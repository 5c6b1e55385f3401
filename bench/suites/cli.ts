/**
 * The CLI as a user runs it: whole processes of the built package's `jbx` (dist/cli/jbx.js), `jbx --help` and
 * `jbx replay` of a recorded 51-step run, against a `node -e 0` process in the same run. Beside each figure:
 * the machine's load average while it was measured, and where the process's time went (Node's own start-up,
 * the time spent loading modules, the modules loaded, the rest), so a figure over its target shows its floor.
 * JBX_BENCH_CLI_RUNS sets the processes timed per row (default 10); JBX_BENCH_TAPE replays that tape instead of
 * recording one (its code must be stored beside it, as a recording worker keeps it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { stepScript } from '../../examples/sample/stepScript';
import { startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { captureRunHistory, startAgent } from '../../src/temporal';
import { startModelServer } from '../../src/testing/modelserver';
import { readTimeline } from '../../src/timetravel/replay';
import { SCRIPTED_MODEL_BREAKER, SCRIPTED_MODEL_BREAKER_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { JBX_BIN } from '../paths';
import { sampleAgentWorker } from '../sampleWorker';

const TURNS = 25; // 25 tool-calling model turns + the answer: 51 steps
const RUNS = Number(process.env.JBX_BENCH_CLI_RUNS ?? 10);
const TIMER = path.join(__dirname, '../requireTimer.js');

/** What bench/requireTimer.js reports of one process. */
interface Startup {
  bootMs: number;
  requireMs: number;
  modules: number;
  exitMs: number;
}

interface ProcessTimes {
  /** Median wall time of the whole process, as the parent saw it. */
  wallMs: number;
  /** Medians of the same processes' own account (a second set of runs, with the timer preloaded). */
  startup: Startup;
  load1m: number;
}

function wallOnce(argv: string[], env: NodeJS.ProcessEnv = process.env): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, argv, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`node ${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return performance.now() - t0;
}

/** `runs` timed processes after one untimed one (which fills the page cache). */
function timeProcess(args: string[], runs: number, dir: string): ProcessTimes {
  const load1m = os.loadavg()[0]!;
  wallOnce([JBX_BIN, ...args]);
  const wallMs = median(Array.from({ length: runs }, () => wallOnce([JBX_BIN, ...args])));
  const out = path.join(dir, 'startup.json');
  const startups: Startup[] = Array.from({ length: runs }, () => {
    const r = spawnSync(process.execPath, ['-r', TIMER, JBX_BIN, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
      env: { ...process.env, JBX_BENCH_STARTUP_OUT: out },
    });
    if (r.status !== 0) throw new Error(`jbx ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
    return JSON.parse(readFileSync(out, 'utf8')) as Startup;
  });
  const m = (k: keyof Startup) => median(startups.map((s) => s[k]));
  return {
    wallMs,
    startup: { bootMs: m('bootMs'), requireMs: m('requireMs'), modules: m('modules'), exitMs: m('exitMs') },
    load1m: (load1m + os.loadavg()[0]!) / 2,
  };
}

/** The row of one command, and, when it misses its target, the row of its floor. */
function rows(label: string, t: ProcessTimes, nodeMs: number, targetMs: number): BenchResult[] {
  const s = t.startup;
  const work = s.exitMs - s.bootMs - s.requireMs;
  const account =
    `load ${t.load1m.toFixed(1)}; target <= ${targetMs} ms; in the process: Node start-up ${s.bootMs.toFixed(0)} ms, ` +
    `loading ${s.modules} modules ${s.requireMs.toFixed(0)} ms, the rest ${work.toFixed(0)} ms`;
  const out = [result(`${label} process`, t.wallMs, 'ms', 'node -e 0 process', nodeMs, account)];
  out[0]!.load1m = t.load1m;
  if (t.wallMs > targetMs) {
    // Not reached: what no change to jbx's own work could remove on this machine now, Node's start-up (an empty
    // process) plus the time its modules take to load.
    const floor = nodeMs + s.requireMs;
    out.push(
      result(
        `${label}: its floor (node -e 0 + loading jbx's modules)`,
        floor,
        'ms',
        `the target`,
        targetMs,
        `load ${t.load1m.toFixed(1)}; the target is missed by ${(t.wallMs - targetMs).toFixed(0)} ms, ` +
          `of which Node start-up alone is ${nodeMs.toFixed(0)} ms`,
      ),
    );
    out[1]!.load1m = t.load1m;
  }
  return out;
}

/** A recorded run of the research agent: 25 tool turns and the answer, its workflow code stored beside it. */
export async function recordSampleTape(tapeDir: string): Promise<string> {
  const config = temporalConfigFromEnv();
  await startDevServer({ detached: true });
  const model = await startModelServer({ script: stepScript(TURNS) });
  const nativeConnection = await NativeConnection.connect({ address: config.address });
  const connection = await Connection.connect({ address: config.address });
  const taskQueue = `bench-cli-${Date.now()}`;
  try {
    const worker = await sampleAgentWorker({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      modelUrl: model.url,
      tape: { dir: tapeDir, fsync: 'none' },
    });
    return await worker.runUntil(async () => {
      const h = await startAgent(
        'researchAgent',
        { question: 'Walk the knowledge base.', maxTurns: TURNS + 2 },
        {
          connection,
          namespace: config.namespace,
          taskQueue,
          runOptions: { breaker: SCRIPTED_MODEL_BREAKER },
        },
      );
      await h.result();
      return (await captureRunHistory(h, tapeDir)).tapeFile;
    });
  } finally {
    await connection.close();
    await nativeConnection.close();
    await model.close();
  }
}

export const cliSuite: BenchSuite = {
  name: 'cli',
  breaker: `${SCRIPTED_MODEL_BREAKER_NOTE} (the run that records the tape the CLI replays)`,
  async run() {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-cli-'));
    try {
      const tape = process.env.JBX_BENCH_TAPE ?? (await recordSampleTape(path.join(dir, 'tapes')));
      const steps = readTimeline(tape).steps.length;
      wallOnce(['-e', '0']);
      const nodeMs = median(Array.from({ length: RUNS }, () => wallOnce(['-e', '0'])));
      const help = timeProcess(['--help'], RUNS, dir);
      const replay = timeProcess(['replay', tape, '--json'], RUNS, dir);
      // The same replay with and without V8's code cache of the stored workflow bundle, alternated so both see
      // the same load: what compiling the bundle costs each time.
      const uncachedEnv = { ...process.env, JUKEBOX_CODE_CACHE_DIR: 'off' };
      const load1m = os.loadavg()[0]!;
      const argv = [JBX_BIN, 'replay', tape, '--json'];
      const cachedRuns: number[] = [];
      const uncachedRuns: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        cachedRuns.push(wallOnce(argv));
        uncachedRuns.push(wallOnce(argv, uncachedEnv));
      }
      const uncached = result(
        `jbx replay of the ${steps}-step tape, stored code compiled from its cache`,
        median(cachedRuns),
        'ms',
        'the same, JUKEBOX_CODE_CACHE_DIR=off (alternated)',
        median(uncachedRuns),
        `load ${load1m.toFixed(1)}`,
      );
      uncached.load1m = load1m;
      return [
        ...rows('jbx --help', help, nodeMs, 150),
        ...rows(`jbx replay of the ${steps}-step tape (the run's stored code)`, replay, nodeMs, 300),
        uncached,
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
