import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { researchAgent } from '../../agents/sample/agent';
import { stepScript } from '../../agents/sample/stepScript';
import { researchTools } from '../../agents/sample/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../../devserver';
import { LlmClient, localEndpoints } from '../../llm';
import { startModelServer } from '../../modelserver';
import { bundleAgentWorkflows, createDirectContext, createJukeboxWorker, startAgent } from '../../runtime';
import { ToolRegistry } from '../../tools';
import { type BenchSuite, median, result, timeRuns } from '../harness';

const STEPS = 20;
const RUNS = 5;

/**
 * A 20-model-step sample run end to end on the dev server, against the same agent driven in-process with no
 * Temporal. The difference per step is what durability costs.
 */
export const e2eRunSuite: BenchSuite = {
  name: 'e2e',
  async run() {
    const config = temporalConfigFromEnv();
    await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
    const model = await startModelServer({ script: stepScript(STEPS) });
    const nativeConnection = await NativeConnection.connect({ address: config.address });
    const connection = await Connection.connect({ address: config.address });
    const taskQueue = `bench-e2e-${Date.now()}`;
    try {
      const worker = await createJukeboxWorker({
        connection: nativeConnection,
        namespace: config.namespace,
        taskQueue,
        endpoints: localEndpoints(model.url),
        tools: researchTools,
        workflowBundle: await bundleAgentWorkflows(),
      });
      const input = { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 };
      // Reloading the script (in memory, microseconds) resets the model server's used-up turns between runs.
      const temporalMs = await worker.runUntil(() =>
        timeRuns(RUNS, async () => {
          model.loadScript(stepScript(STEPS));
          const handle = await startAgent('researchAgent', input, {
            connection,
            namespace: config.namespace,
            taskQueue,
          });
          await handle.result();
        }),
      );
      const direct = createDirectContext({
        llm: new LlmClient(localEndpoints(model.url)),
        tools: new ToolRegistry(researchTools),
      });
      const directMs = await timeRuns(RUNS, async () => {
        model.loadScript(stepScript(STEPS));
        await researchAgent.run(direct, input);
      });
      const t = median(temporalMs);
      const d = median(directMs);
      const steps = STEPS * 2 + 1; // model steps plus their tool steps
      return [
        result(`${STEPS}-step sample run, end to end`, t, 'ms', 'same agent in-process, no Temporal', d),
        result(
          'overhead per step (llm or tool activity)',
          (t - d) / steps,
          'ms',
          'in-process step time',
          d / steps,
          `${steps} steps a run, median of ${RUNS} runs`,
        ),
      ];
    } finally {
      await connection.close();
      await nativeConnection.close();
      await model.close();
    }
  },
};
