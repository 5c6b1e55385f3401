import path from 'node:path';
import { Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection } from '@temporalio/worker';
import { researchAgent } from '../../agents/sample/agent';
import { stepScript } from '../../agents/sample/stepScript';
import { researchTools } from '../../agents/sample/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../../devserver';
import { LlmClient, localEndpoints } from '../../llm';
import { startModelServer } from '../../modelserver';
import { createDirectContext, createJukeboxWorker, startAgent } from '../../runtime';
import { ToolRegistry } from '../../tools';
import { type BenchSuite, median, result } from '../harness';

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
        workflowBundle: await bundleWorkflowCode({
          workflowsPath: path.join(__dirname, '../../workflows/index.ts'),
          logger: { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} },
        }),
      });
      const input = { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 };
      const temporalMs: number[] = [];
      const directMs: number[] = [];
      await worker.runUntil(async () => {
        for (let i = 0; i < RUNS + 1; i++) {
          model.loadScript(stepScript(STEPS));
          const t0 = performance.now();
          const handle = await startAgent('researchAgent', input, {
            connection,
            namespace: config.namespace,
            taskQueue,
          });
          await handle.result();
          // The first run warms the worker's caches and the server's namespace; it is not counted.
          if (i > 0) temporalMs.push(performance.now() - t0);
        }
      });
      const direct = createDirectContext({
        llm: new LlmClient(localEndpoints(model.url)),
        tools: new ToolRegistry(researchTools),
      });
      for (let i = 0; i < RUNS + 1; i++) {
        model.loadScript(stepScript(STEPS));
        const t0 = performance.now();
        await researchAgent.run(direct, input);
        if (i > 0) directMs.push(performance.now() - t0);
      }
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
