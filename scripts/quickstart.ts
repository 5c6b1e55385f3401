/**
 * The main job on embedded defaults: the Temporal dev server (installed and started when none answers), the
 * local model server (unless a real API key is set), an in-process worker, and one run of the sample agent.
 */
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { researchTools } from '../agents/sample/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../devserver';
import { endpointsFromEnv, localEndpoints } from '../llm';
import { startModelServer } from '../modelserver';
import { createJukeboxWorker, startAgent, waitWithProgress } from '../runtime';
import { printStep } from '../runtime/printStep';
import { installQuietRuntime } from '../runtime/quietRuntime';

async function main() {
  installQuietRuntime();
  const config = temporalConfigFromEnv();
  await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
  const realApi = Boolean(process.env.OPENAI_API_KEY);
  const model = realApi
    ? undefined
    : await startModelServer({ script: path.join(__dirname, '../agents/sample/script.yaml') });
  console.log(
    `model endpoint: ${model ? `local model server ${model.url}` : 'the real OpenAI API (OPENAI_API_KEY is set)'}`,
  );

  const nativeConnection = await NativeConnection.connect({ address: config.address });
  const connection = await Connection.connect({ address: config.address });
  const taskQueue = `quickstart-${process.pid}`;
  try {
    const worker = await createJukeboxWorker({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      endpoints: model ? localEndpoints(model.url) : endpointsFromEnv(),
      tools: researchTools,
    });
    await worker.runUntil(async () => {
      const question = 'How many times around the Earth is the distance to the Moon?';
      const handle = await startAgent(
        'researchAgent',
        { question },
        { connection, namespace: config.namespace, taskQueue },
      );
      console.log(`\nresearchAgent run ${handle.workflowId}`);
      console.log(`question: ${question}`);
      const result = await waitWithProgress<{ answer: string; turns: number }>(handle, printStep);
      console.log(`\nanswer: ${result.output.answer}`);
      console.log(
        `\nsee the run in the Temporal Web UI: http://127.0.0.1:${config.uiPort}/namespaces/${config.namespace}/workflows/${handle.workflowId}`,
      );
      console.log('the dev server keeps running; stop it with: npm run temporal:stop');
    });
  } finally {
    await connection.close();
    await nativeConnection.close();
    await model?.close();
  }
}

main().catch((err) => {
  console.error(`quickstart failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
