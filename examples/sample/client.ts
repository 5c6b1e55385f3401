/** Starts the sample agent and prints its steps: `tsx client.ts [QUESTION]`. */
import { Connection } from '@temporalio/client';
import { printStep } from '../../src/agent/printStep';
import { DEFAULT_TASK_QUEUE, startAgent, waitWithProgress } from '../../src/temporal';
import { temporalConfigFromEnv } from '../../src/temporal/config';

async function main() {
  const temporal = temporalConfigFromEnv();
  const connection = await Connection.connect({ address: temporal.address });
  const question = process.argv[2] ?? 'How many times around the Earth is the distance to the Moon?';
  const handle = await startAgent(
    'researchAgent',
    { question },
    {
      connection,
      namespace: temporal.namespace,
      taskQueue: process.env.JUKEBOX_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    },
  );
  console.log(`started ${handle.workflowId}`);
  const result = await waitWithProgress<{ answer: string }>(handle, printStep);
  console.log(`answer: ${result.output.answer}`);
  await connection.close();
}

main().catch((err) => {
  console.error(`jukebox client failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
