/**
 * The sample's worker: `tsx examples/sample/worker.ts`. A Temporal worker with Jukebox added as a plugin;
 * configuration comes from the environment (README: JUKEBOX_TEMPORAL_ADDRESS, JUKEBOX_MODEL_URL, ...).
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { DEFAULT_TASK_QUEUE, endpointsFromEnv, JukeboxPlugin } from '../../src';
import { temporalConfigFromEnv } from '../../src/temporal/config';
import { researchTools } from './tools';

async function main() {
  const temporal = temporalConfigFromEnv();
  const connection = await NativeConnection.connect({ address: temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: temporal.namespace,
    taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    workflowsPath: require.resolve('./workflows'),
    plugins: [new JukeboxPlugin({ tools: researchTools, endpoints: endpointsFromEnv() })],
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
