/**
 * A worker for the page agent (`tsx examples/pages/worker.ts`), configured from the environment like the sample
 * worker: JUKEBOX_TASK_QUEUE, JUKEBOX_MODEL_URL, JUKEBOX_TAPE_DIR / JUKEBOX_TAPE_STORE, and JUKEBOX_PAGE_BYTES
 * for the size of a page.
 */
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { endpointsFromEnv } from '../../src/llm';
import { createJukeboxWorker, DEFAULT_TASK_QUEUE } from '../../src/temporal';
import { pageTool } from './tools';

async function main() {
  const temporal = temporalConfigFromEnv();
  const connection = await NativeConnection.connect({ address: temporal.address });
  const worker = await createJukeboxWorker({
    connection,
    namespace: temporal.namespace,
    taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    workflowsPath: path.join(__dirname, '../workflows.ts'),
    endpoints: endpointsFromEnv(),
    tools: [pageTool(Number(process.env.JUKEBOX_PAGE_BYTES ?? 8 * 1024))],
  });
  // Tests wait for this exact line before starting runs.
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
