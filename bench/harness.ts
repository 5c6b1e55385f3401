import { mkdirSync, writeFileSync } from 'node:fs';
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
  run(): Promise<BenchResult[]>;
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

function fmt(n: number | null): string {
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

export function writeResults(results: BenchResult[], dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'results.json');
  writeFileSync(file, `${JSON.stringify({ measuredAt: new Date().toISOString(), results }, null, 2)}\n`);
  return file;
}
