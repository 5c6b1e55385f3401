/** Runs every benchmark suite (or those named on the command line) and prints one table plus a JSON file. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installQuietRuntime } from '../src/temporal/worker/quietRuntime';
import { type BenchResult, formatTable, writeResults } from './harness';
import { breakerSuite } from './suites/breaker';
import { cliSuite } from './suites/cli';
import { e2eRunSuite } from './suites/e2eRun';
import { exportSuite } from './suites/export';
import { historySuite } from './suites/history';
import { loadSuite } from './suites/load';
import { proxySuite } from './suites/proxy';
import { recordingSuite } from './suites/recording';
import { replaySuite } from './suites/replay';
import { shadowBoothSuite } from './suites/shadowBooth';
import { stepCheckpointSuite } from './suites/stepCheckpoint';
import { tapeFormatSuite } from './suites/tapeFormat';
import { tapeListingSuite } from './suites/tapeListing';
import { tapeStoreSuite } from './suites/tapeStore';
import { viewerSuite } from './suites/viewer';

const suites = [
  tapeFormatSuite,
  tapeStoreSuite,
  e2eRunSuite,
  loadSuite,
  recordingSuite,
  shadowBoothSuite,
  stepCheckpointSuite,
  exportSuite,
  breakerSuite,
  proxySuite,
  replaySuite,
  tapeListingSuite,
  viewerSuite,
  cliSuite,
  historySuite,
];

async function main() {
  installQuietRuntime();
  // The suites' workers record into temporary tape folders and their clients read results: one content store
  // for both, as one deployment's environment gives them (docs/tape-store.md, "The content store").
  process.env.JUKEBOX_CONTENT_DIR ||= mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-content-'));
  const only = process.argv.slice(2);
  const results: BenchResult[] = [];
  for (const suite of suites) {
    if (only.length && !only.includes(suite.name)) continue;
    process.stderr.write(`bench: ${suite.name}...\n`);
    results.push(...(await suite.run()));
  }
  console.log(formatTable(results));
  // Rows that time whole processes say where the time went (and what bounds it) in their notes.
  for (const r of results) if (r.load1m !== undefined && r.note) console.log(`  ${r.name}: ${r.note}`);
  const file = writeResults(results, path.join(__dirname, 'results'));
  console.log(`\nresults written to ${path.relative(process.cwd(), file)}`);
}

main().catch((err) => {
  console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
