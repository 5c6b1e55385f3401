import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { stepScript } from '../../examples/sample/stepScript';
import { researchTools } from '../../examples/sample/tools';
import { startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { localEndpoints } from '../../src/llm';
import { bundleAgentWorkflows, createJukeboxWorker, startAgent } from '../../src/temporal';
import { startModelServer } from '../../src/testing/modelserver';
import { type BenchSuite, median, result, timeRuns } from '../harness';
import { EXAMPLE_WORKFLOWS_PATH } from '../paths';

const STEPS = 50;
const RUNS = 3;
// About 1 KB of new assistant text a step, resent with the whole conversation on every later request.
const FILLER = 'reviewing the notes gathered so far and deciding what to look up next. '.repeat(14);

/**
 * A 50-step growing-context chat on the dev server with the recorder on and off (same worker code, same
 * bundle), and the size of its tape against the size of the same run's Temporal history.
 */
export const recordingSuite: BenchSuite = {
  name: 'recording',
  async run() {
    const config = temporalConfigFromEnv();
    await startDevServer({ detached: true });
    const script = () => stepScript(STEPS, { filler: FILLER });
    const model = await startModelServer({ script: script() });
    const nativeConnection = await NativeConnection.connect({ address: config.address });
    const connection = await Connection.connect({ address: config.address });
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-tapes-'));
    const workflowBundle = await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH);
    const input = { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 };
    const measure = async (worker: Worker, taskQueue: string) => {
      let last: Awaited<ReturnType<typeof startAgent>> | undefined;
      const times = await worker.runUntil(() =>
        timeRuns(RUNS, async () => {
          model.loadScript(script());
          last = await startAgent('researchAgent', input, {
            connection,
            namespace: config.namespace,
            taskQueue,
          });
          await last.result();
        }),
      );
      const history = await last!.fetchHistory();
      return {
        ms: median(times),
        historyBytes: temporal.api.history.v1.History.encode(history).finish().byteLength,
      };
    };
    try {
      const mk = (taskQueue: string, tape: false | { dir: string }) =>
        createJukeboxWorker({
          connection: nativeConnection,
          namespace: config.namespace,
          taskQueue,
          endpoints: localEndpoints(model.url),
          tools: researchTools,
          workflowBundle,
          tape,
        });
      const offQueue = `bench-rec-off-${Date.now()}`;
      const off = await measure(await mk(offQueue, false), offQueue);
      const onQueue = `bench-rec-on-${Date.now()}`;
      const on = await measure(await mk(onQueue, { dir: tapeDir }), onQueue);
      const tapes = readdirSync(tapeDir).filter((f) => f.endsWith('.jbx'));
      const tapeBytes = median(tapes.map((f) => statSync(path.join(tapeDir, f)).size));
      return [
        result(
          `${STEPS}-step run, recorded`,
          on.ms,
          'ms',
          'same run, recorder off',
          off.ms,
          'target ratio <= 1.03',
        ),
        result(
          `${STEPS}-step growing chat: tape bytes`,
          tapeBytes,
          'bytes',
          'Temporal history bytes (fetchHistory, protobuf)',
          on.historyBytes,
          'target ratio <= 0.2',
        ),
      ];
    } finally {
      await connection.close();
      await nativeConnection.close();
      await model.close();
      rmSync(tapeDir, { recursive: true, force: true });
    }
  },
};
