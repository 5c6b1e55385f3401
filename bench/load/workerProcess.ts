/**
 * One side of the load bench as a worker process of its own, as a deployment runs it: the bench reads this
 * process's open files, peak memory and CPU time from /proc, apart from the client that starts the runs.
 *
 *   node --import tsx bench/load/workerProcess.ts '<LoadWorkerConfig as JSON>'
 *
 * Prints `ready` once it polls, runs until its stdin closes, then prints its figures as one JSON line.
 */
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { researchTools } from '../../examples/sample/tools';
import { localEndpoints } from '../../src/llm';
import { FolderTapeStore } from '../../src/recorder';
import { createJukeboxWorker } from '../../src/temporal';
import { installQuietRuntime } from '../../src/temporal/worker/quietRuntime';
import { floorActivities } from '../floor';
import { plainResearchActivities } from '../plainResearch';

export interface LoadWorkerConfig {
  /** floor: no-op activities; plain: the research agent on plain Temporal; jukebox: the research agent on Jukebox. */
  side: 'floor' | 'plain' | 'jukebox';
  address: string;
  namespace: string;
  taskQueue: string;
  /** The workflow bundle the bench built once, written to a file. */
  bundlePath: string;
  workerOptions: Partial<WorkerOptions>;
  /** The model server (plain and Jukebox sides); Jukebox side: the tape folder and its writer budget. */
  modelUrl?: string;
  tapeDir?: string;
  maxOpenTapes?: number;
}

export interface LoadWorkerReport {
  /** Most tape writers the store held open at once (Jukebox side). */
  writersPeakOpen?: number;
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '') as LoadWorkerConfig;
  installQuietRuntime();
  const connection = await NativeConnection.connect({ address: config.address });
  const common = {
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    workflowBundle: { codePath: config.bundlePath },
  };
  const store =
    config.side === 'jukebox'
      ? new FolderTapeStore({ dir: config.tapeDir!, maxOpenTapes: config.maxOpenTapes })
      : undefined;
  const worker = store
    ? await createJukeboxWorker({
        ...common,
        endpoints: localEndpoints(config.modelUrl!),
        tools: researchTools,
        tape: { dir: config.tapeDir!, store },
        workerOptions: config.workerOptions,
      })
    : await Worker.create({
        ...common,
        activities:
          config.side === 'plain'
            ? plainResearchActivities(localEndpoints(config.modelUrl!))
            : floorActivities,
        ...config.workerOptions,
      });
  const stdinClosed = new Promise<void>((resolve) => {
    process.stdin.on('end', resolve).on('close', resolve).resume();
  });
  await worker.runUntil(async () => {
    process.stdout.write('ready\n');
    await stdinClosed;
  });
  await store?.close();
  await connection.close();
  const report: LoadWorkerReport = store ? { writersPeakOpen: store.writers.peakOpen } : {};
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err) => {
  process.stderr.write(
    `load worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
