/** Jukebox worker entry: `tsx worker.ts`. Configuration comes from the environment (see README). */
import { NativeConnection } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { endpointsFromEnv } from '../../src/llm';
import { createJukeboxWorker, DEFAULT_TASK_QUEUE } from '../../src/temporal';
import { researchTools } from './tools';

async function main() {
  const temporal = temporalConfigFromEnv();
  const connection = await NativeConnection.connect({ address: temporal.address });
  const worker = await createJukeboxWorker({
    connection,
    namespace: temporal.namespace,
    taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    endpoints: endpointsFromEnv(),
    tools: researchTools,
  });
  // Tests and scripts wait for this exact line before starting runs.
  console.log(`jukebox worker ready on task queue ${worker.options.taskQueue}`);
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(`jukebox worker failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
