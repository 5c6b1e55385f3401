import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { stepScript } from '../../examples/sample/stepScript';
import { researchTools } from '../../examples/sample/tools';
import { startDevServer, temporalConfigFromEnv } from '../../servers/devserver';
import { localEndpoints } from '../../src/llm';
import { bundleAgentWorkflows, createJukeboxWorker, startAgent } from '../../src/temporal';
import { type ScriptTurn, startModelServer } from '../../src/testing/modelserver';
import { SCRIPTED_MODEL_BREAKER, SCRIPTED_MODEL_BREAKER_NOTE } from '../breakers';
import { type BenchSuite, interleave, median, result, spread } from '../harness';

const STEPS = 50;
/** Rounds of the interleaved on/off comparison: each round runs the recorder off, then on. */
const ROUNDS = Number(process.env.JBX_BENCH_RECORDING_ROUNDS ?? 7);
// About 1 KB of new assistant text a step, resent with the whole conversation on every later request.
const FILLER = 'reviewing the notes gathered so far and deciding what to look up next. '.repeat(14);
const WORKFLOWS = path.join(__dirname, '../flat/workflows.ts');

/** The flat run's model script: a reply of the same size to each step's question, each its own (no loop). */
function flatScript(steps: number): { name: string; turns: ScriptTurn[] } {
  return {
    name: `flat-${steps}`,
    turns: Array.from({ length: steps }, (_, i) => ({
      id: `item-${i}`,
      match: { lastUser: `Check item ${i} of the list.` },
      reply: { text: `Item ${i}: ${FILLER}`, chunkSize: 16 },
      repeat: true,
    })),
  };
}

/**
 * A 50-step growing-context chat on the dev server with the recorder on and off (same worker code, same bundle),
 * interleaved round by round so both sides see the same machine load; and the size of a run's tape against its
 * Temporal history (protobuf, and gzip-compressed) for that growing chat and for a flat run whose requests do not
 * grow (bench/flat/agent.ts).
 */
export const recordingSuite: BenchSuite = {
  name: 'recording',
  breaker: `${SCRIPTED_MODEL_BREAKER_NOTE}; the flat run runs without a breaker (a same-shaped question every step is what semantic-repeat stops)`,
  async run() {
    const config = temporalConfigFromEnv();
    await startDevServer({ detached: true });
    const script = () => stepScript(STEPS, { filler: FILLER });
    const model = await startModelServer({ script: script() });
    const nativeConnection = await NativeConnection.connect({ address: config.address });
    const connection = await Connection.connect({ address: config.address });
    const base = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-tapes-'));
    const workflowBundle = await bundleAgentWorkflows(WORKFLOWS);
    const stamp = Date.now();
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
    const start = async (workflow: string, input: unknown, taskQueue: string) => {
      model.loadScript(workflow === 'flatAgent' ? flatScript(STEPS) : script());
      const h = await startAgent(workflow, input, {
        connection,
        namespace: config.namespace,
        taskQueue,
        // The flat run asks a same-shaped question every step, which semantic-repeat reads as a loop: no breaker.
        runOptions: { breaker: workflow === 'flatAgent' ? false : SCRIPTED_MODEL_BREAKER },
      });
      await h.result();
      return h;
    };
    const historyBytes = async (h: Awaited<ReturnType<typeof start>>) => {
      const bytes = temporal.api.history.v1.History.encode(await h.fetchHistory()).finish();
      return { protobuf: bytes.byteLength, gzip: gzipSync(bytes).byteLength };
    };
    const onlyTape = (dir: string) => {
      const tapes = readdirSync(dir).filter((f) => f.endsWith('.jbx'));
      return median(tapes.map((f) => statSync(path.join(dir, f)).size));
    };
    try {
      const dirs = { on: path.join(base, 'on'), flat: path.join(base, 'flat') };
      const queues = {
        off: `bench-rec-off-${stamp}`,
        on: `bench-rec-on-${stamp}`,
        flat: `bench-rec-flat-${stamp}`,
      };
      const off = await mk(queues.off, false);
      const on = await mk(queues.on, { dir: dirs.on });
      const flat = await mk(queues.flat, { dir: dirs.flat });
      const input = { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 };
      let lastOn: Awaited<ReturnType<typeof start>> | undefined;
      let flatRun: Awaited<ReturnType<typeof start>> | undefined;
      const runAll = async <T>(workers: Worker[], fn: () => Promise<T>): Promise<T> =>
        workers.length ? workers[0]!.runUntil(() => runAll(workers.slice(1), fn)) : fn();
      const times = await runAll([off, on, flat], async () => {
        const t = await interleave(ROUNDS, {
          off: async () => void (await start('researchAgent', input, queues.off)),
          on: async () => {
            lastOn = await start('researchAgent', input, queues.on);
          },
        });
        flatRun = await start('flatAgent', { steps: STEPS }, queues.flat);
        return t;
      });
      const growing = { tape: onlyTape(dirs.on), history: await historyBytes(lastOn!) };
      const flatSizes = { tape: onlyTape(dirs.flat), history: await historyBytes(flatRun!) };
      const spreadNote = `interleaved, ${ROUNDS} runs each, spread on ${spread(times.on)} ms, off ${spread(times.off)} ms`;
      return [
        result(
          `${STEPS}-step growing chat, recorded`,
          median(times.on),
          'ms',
          'same run, recorder off',
          median(times.off),
          `${spreadNote}; target ratio <= 1.03`,
        ),
        result(
          `${STEPS}-step growing chat: tape bytes`,
          growing.tape,
          'bytes',
          'Temporal history bytes (fetchHistory, protobuf)',
          growing.history.protobuf,
          'target ratio <= 0.2',
        ),
        result(
          `${STEPS}-step growing chat: tape bytes`,
          growing.tape,
          'bytes',
          'the same history gzip-compressed',
          growing.history.gzip,
        ),
        result(
          `${STEPS}-step flat run (same-sized requests): tape bytes`,
          flatSizes.tape,
          'bytes',
          'Temporal history bytes (fetchHistory, protobuf)',
          flatSizes.history.protobuf,
          'bench/flat/agent.ts: one question a step, no history resent',
        ),
        result(
          `${STEPS}-step flat run (same-sized requests): tape bytes`,
          flatSizes.tape,
          'bytes',
          'the same history gzip-compressed',
          flatSizes.history.gzip,
        ),
      ];
    } finally {
      await connection.close();
      await nativeConnection.close();
      await model.close();
      rmSync(base, { recursive: true, force: true });
    }
  },
};
