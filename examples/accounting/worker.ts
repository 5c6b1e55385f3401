/**
 * The accounting agent's worker: `tsx examples/accounting/worker.ts [DEMO_DIR]`. A Temporal worker with Jukebox
 * as a plugin and a Shadow Booth over a fresh copy of the demo data (default .jukebox/accounting): the ledger
 * file, the SQLite accounts table and the notify MCP server's outbox. `npm run quickstart` runs the same agent
 * in one process and prints what each run staged, committed or rolled back.
 */
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { DEFAULT_TASK_QUEUE, endpointsFromEnv, JukeboxPlugin } from '../../src';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import { temporalConfigFromEnv } from '../../src/temporal/config';
import { accountingBooth, prepareAccountingDemo } from './demo';
import { accountingTools } from './tools';

async function main() {
  const demo = await prepareAccountingDemo(path.resolve(process.argv[2] ?? '.jukebox/accounting'));
  const booth = new BoothRuntime(accountingBooth(demo));
  const temporal = temporalConfigFromEnv();
  const connection = await NativeConnection.connect({ address: temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: temporal.namespace,
    taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    workflowsPath: require.resolve('./workflows'),
    plugins: [new JukeboxPlugin({ tools: accountingTools, booth, endpoints: endpointsFromEnv() })],
  });
  console.log(`jukebox worker ready on task queue ${worker.options.taskQueue} (demo data in ${demo.dir})`);
  try {
    await worker.run();
  } finally {
    await booth.close();
    await connection.close();
  }
}

main().catch((err) => {
  console.error(`accounting worker failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
