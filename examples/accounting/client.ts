/** Asks the accounting agent for a refund and prints its steps: `tsx examples/accounting/client.ts [REQUEST]`. */
import { Connection } from '@temporalio/client';
import { DEFAULT_TASK_QUEUE, printStep, startAgent, waitWithProgress } from '../../src';
import { temporalConfigFromEnv } from '../../src/temporal/config';
import type { AccountingInput, AccountingOutput } from './agent';

async function main() {
  const temporal = temporalConfigFromEnv();
  const connection = await Connection.connect({ address: temporal.address });
  try {
    const request = process.argv[2] ?? 'Refund $120 to customer C-1001: duplicate charge.';
    const handle = await startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request },
      {
        connection,
        namespace: temporal.namespace,
        taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
      },
    );
    console.log(`started ${handle.workflowId}`);
    const { output } = await waitWithProgress(handle, printStep);
    console.log(`agent: ${output.answer}`);
    console.log(output.committed ? 'committed' : `rolled back: ${output.reason}`);
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(`accounting client failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
