/**
 * Runs every benchmark suite (or those named on the command line), prints each one's table with the breaker it
 * ran with, records each run (machine, cores, load before and after, date, commit) into bench/results.json and
 * renders bench/RESULTS.md and the docs' marked tables from it.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installQuietRuntime } from '../src/temporal/worker/quietRuntime';
import { formatTable, loadAverage, machineInfo, measuredCommit, type SuiteRun } from './harness';
import { mergeRuns, publish, RESULTS_MD, readResults } from './report';
import { breakerSuite } from './suites/breaker';
import { cliSuite } from './suites/cli';
import { e2eRunSuite } from './suites/e2eRun';
import { exportSuite } from './suites/export';
import { historySuite } from './suites/history';
import { installSizeSuite } from './suites/installSize';
import { loadSuite } from './suites/load';
import { proxySuite } from './suites/proxy';
import { recordingSuite } from './suites/recording';
import { replaySuite } from './suites/replay';
import { shadowBoothSuite } from './suites/shadowBooth';
import { stepCheckpointSuite } from './suites/stepCheckpoint';
import { streamingSuite } from './suites/streaming';
import { tapeFormatSuite } from './suites/tapeFormat';
import { tapeListingSuite } from './suites/tapeListing';
import { tapeStoreSuite } from './suites/tapeStore';
import { viewerSuite } from './suites/viewer';

// The load suite (hundreds of concurrent runs) goes last: the figures the README and docs quote come first.
const suites = [
  tapeFormatSuite,
  tapeStoreSuite,
  e2eRunSuite,
  recordingSuite,
  shadowBoothSuite,
  stepCheckpointSuite,
  exportSuite,
  breakerSuite,
  proxySuite,
  replaySuite,
  tapeListingSuite,
  viewerSuite,
  streamingSuite,
  cliSuite,
  installSizeSuite,
  historySuite,
  loadSuite,
];

async function main() {
  installQuietRuntime();
  // The suites' workers record into temporary tape folders and their clients read results: one content store
  // for both, as one deployment's environment gives them (docs/tape-store.md, "The content store").
  process.env.JUKEBOX_CONTENT_DIR ||= mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-content-'));
  const only = process.argv.slice(2);
  const unknown = only.filter((n) => !suites.some((s) => s.name === n));
  if (unknown.length)
    throw new Error(`no suite named ${unknown.join(', ')} (suites: ${suites.map((s) => s.name).join(', ')})`);
  const machine = machineInfo();
  const commit = measuredCommit();
  for (const suite of suites) {
    if (only.length && !only.includes(suite.name)) continue;
    const before = loadAverage();
    process.stderr.write(`bench: ${suite.name} (load ${before.join(' ')})...\n`);
    const startedAt = new Date();
    const rows = await suite.run();
    const finishedAt = new Date();
    const run: SuiteRun = {
      suite: suite.name,
      breaker: suite.breaker,
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      seconds: (finishedAt.getTime() - startedAt.getTime()) / 1000,
      load: { before, after: loadAverage() },
      machine,
      commit,
      rows,
    };
    console.log(
      `\n== ${suite.name}: ${Math.round(run.seconds)} s, load ${run.load.before.join(' ')} -> ${run.load.after.join(' ')}`,
    );
    console.log(`breaker: ${suite.breaker}`);
    console.log(formatTable(rows));
    // Rows that time whole processes say where the time went (and what bounds it) in their notes.
    for (const r of rows) if (r.load1m !== undefined && r.note) console.log(`  ${r.name}: ${r.note}`);
    // Published after every suite: a suite that fails later does not lose the ones before it.
    publish(
      mergeRuns(
        readResults(),
        [run],
        suites.map((s) => s.name),
      ),
    );
  }
  console.log(`\nresults written to bench/results.json and ${path.relative(process.cwd(), RESULTS_MD)}`);
}

main().catch((err) => {
  console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
