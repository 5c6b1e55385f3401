/**
 * What every benchmark suite shares: the row it reports (Jukebox's figure beside a peer measured in the same run),
 * the record of one suite's run (machine, cores, load before and after, date, the breaker it ran with), and the
 * timing helpers. The runner (bench/run.ts) is the one place that records a run; suites only measure.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

/** One row of the results table: Jukebox's figure, the peer it is measured against in the same run, the ratio. */
export interface BenchResult {
  name: string;
  jukebox: number;
  peer: string;
  peer_value: number | null;
  /** jukebox / peer_value; null when there is no peer. */
  ratio: number | null;
  unit: string;
  note?: string;
  /** The machine's 1-minute load average while a process-timing row was measured. */
  load1m?: number;
}

export interface BenchSuite {
  name: string;
  /**
   * How the circuit breaker is set for this suite's agent runs, and why: the runner prints it beside the rows and
   * RESULTS.md states it, so a reader knows what was guarded (say so when the suite runs no agent).
   */
  breaker: string;
  run(): Promise<BenchResult[]>;
}

/** The machine a suite ran on. */
export interface MachineInfo {
  host: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
}

/** One suite's run, as bench/results.json keeps it. */
export interface SuiteRun {
  suite: string;
  breaker: string;
  startedAt: string;
  finishedAt: string;
  seconds: number;
  /** 1-, 5- and 15-minute load averages when the suite started and when it ended. */
  load: { before: number[]; after: number[] };
  machine: MachineInfo;
  /** The commit measured, `-dirty` when the tree had changes. */
  commit: string;
  rows: BenchResult[];
}

export function result(
  name: string,
  jukebox: number,
  unit: string,
  peer: string,
  peerValue: number | null,
  note?: string,
): BenchResult {
  return {
    name,
    jukebox,
    peer,
    peer_value: peerValue,
    ratio: peerValue ? jukebox / peerValue : null,
    unit,
    ...(note ? { note } : {}),
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Smallest and largest of `values`, as "min-max" with the unit's precision: the spread a median hides. */
export function spread(values: number[]): string {
  return `${fmt(Math.min(...values))}-${fmt(Math.max(...values))}`;
}

/**
 * Times `runs` calls of `once` after one untimed warm-up call (which fills the worker's caches and the
 * server's namespace state), so every suite measures steady state the same way.
 */
export async function timeRuns(runs: number, once: (i: number) => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    await once(i);
    if (i > 0) times.push(performance.now() - t0);
  }
  return times;
}

/**
 * Times `sides` in turn, `rounds` times each, after one untimed warm-up round: both sides see the same
 * stretch of machine load, where timing one side's runs and then the other's would hand one of them a quieter
 * minute. Returns each side's times in round order.
 */
export async function interleave<K extends string>(
  rounds: number,
  sides: Record<K, (round: number) => Promise<void>>,
): Promise<Record<K, number[]>> {
  const times = Object.fromEntries(Object.keys(sides).map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i <= rounds; i++)
    for (const k of Object.keys(sides) as K[]) {
      const t0 = performance.now();
      await sides[k](i);
      if (i > 0) times[k].push(performance.now() - t0);
    }
  return times;
}

export function fmt(n: number | null): string {
  if (n === null) return '-';
  if (n === 0) return '0';
  const abs = Math.abs(n);
  return abs >= 100 ? n.toFixed(0) : abs >= 1 ? n.toFixed(2) : n.toPrecision(3);
}

export function formatTable(results: BenchResult[]): string {
  const rows = [
    ['benchmark', 'jukebox', 'peer', 'peer value', 'ratio', 'unit', 'load'],
    ...results.map((r) => [
      r.name,
      fmt(r.jukebox),
      r.peer,
      fmt(r.peer_value),
      fmt(r.ratio),
      r.unit,
      r.load1m === undefined ? '' : r.load1m.toFixed(1),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    host: os.hostname(),
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
  };
}

export function loadAverage(): number[] {
  return os.loadavg().map((l) => Math.round(l * 100) / 100);
}

/** The measured commit; `unknown` outside a git checkout. */
export function measuredCommit(root = path.join(__dirname, '..')): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${head}-dirty` : head;
  } catch {
    return 'unknown';
  }
}
