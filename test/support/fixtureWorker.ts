/** The shared body of the worker processes the crash and long-step tests spawn and SIGKILL. */
import fs from 'node:fs';
import { NativeConnection } from '@temporalio/worker';
import type { BoothRuntime } from '../../src/booth/shadowBooth';
import { bundleAgentWorkflows, createJukeboxWorker, type JukeboxWorkerOptions } from '../../src/temporal';
import { temporalConfigFromEnv } from '../../src/temporal/config';

export interface FixtureWorker {
  workflowsPath: string;
  booth?: BoothRuntime;
  /** Everything else createJukeboxWorker takes; connection, namespace and task queue come from the environment. */
  worker: Omit<
    JukeboxWorkerOptions,
    'connection' | 'namespace' | 'taskQueue' | 'workflowBundle' | 'workflowsPath' | 'booth'
  >;
  /** Runs once the worker exists, before it says it is ready. */
  beforeReady?: () => Promise<void>;
}

/**
 * The body of a worker process that a test spawns (test/support/workerProcess.ts) and may SIGKILL: connects to
 * the suite's Temporal server, runs a Jukebox worker on `JUKEBOX_TASK_QUEUE`, prints the ready line spawnWorker
 * waits for, and closes the booth and the connection when the worker stops. Bundling takes seconds and a test
 * starts a worker after each kill, so the first process writes the bundle to `JUKEBOX_BUNDLE_FILE` (atomically:
 * two may start at once) and later ones read it.
 */
export function runFixtureWorker(name: string, setup: () => FixtureWorker | Promise<FixtureWorker>): void {
  const main = async () => {
    const fixture = await setup();
    const temporal = temporalConfigFromEnv();
    const connection = await NativeConnection.connect({ address: temporal.address });
    const bundleFile = process.env.JUKEBOX_BUNDLE_FILE;
    let code: string;
    if (bundleFile && fs.existsSync(bundleFile)) code = fs.readFileSync(bundleFile, 'utf8');
    else {
      code = (await bundleAgentWorkflows(fixture.workflowsPath)).code;
      if (bundleFile) {
        fs.writeFileSync(`${bundleFile}.${process.pid}.tmp`, code);
        fs.renameSync(`${bundleFile}.${process.pid}.tmp`, bundleFile);
      }
    }
    const worker = await createJukeboxWorker({
      ...fixture.worker,
      workflowBundle: { code },
      connection,
      namespace: temporal.namespace,
      taskQueue: process.env.JUKEBOX_TASK_QUEUE!,
      ...(fixture.booth ? { booth: fixture.booth } : {}),
    });
    await fixture.beforeReady?.();
    console.log(`jukebox worker ready on task queue ${worker.options.taskQueue}`);
    try {
      await worker.run();
    } finally {
      await fixture.booth?.close();
      await connection.close();
    }
  };
  main().catch((err) => {
    console.error(`${name} failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  });
}
