import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
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
import { readTape } from '../../src/recorder/tape';
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

/** Where a tape's bytes go, against the peer: its frame heads (fixed per frame) and its payloads. */
function layoutNote(
  l: {
    version: number;
    frames: number;
    heads: number;
    headBytes: number;
    payloads: number;
    blobs: number;
    compressed: number;
    byKind: [string, number][];
  },
  peer: number,
): string {
  const r = (n: number) => (n / peer).toFixed(2);
  return (
    `format v${l.version}: ${l.frames} frames, ${l.blobs} blobs (${l.compressed} stored compressed); ` +
    `their ${l.headBytes}-byte heads are ${l.heads} bytes (ratio ${r(l.heads)}), their payloads ${l.payloads} ` +
    `(ratio ${r(l.payloads)}): the payloads alone bound the ratio without fewer frames; payload bytes by kind: ` +
    `${l.byKind.map(([k, n]) => `${k} ${n}`).join(', ')}; ` +
    'the replies repeat one sentence, which compresses further than prose'
  );
}

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
    // Where a tape's bytes go: frame heads are a fixed size each (FORMAT.md: 32 bytes from version 3, 84
    // before), the rest is payloads; printed beside the ratio.
    const tapeOf = (dir: string, workflowId: string) => {
      const f = readdirSync(dir).find((n) => n.startsWith(`${workflowId}--`) && n.endsWith('.jbx'));
      if (!f) throw new Error(`no tape of ${workflowId} in ${dir}`);
      const file = path.join(dir, f);
      const tape = readTape(file);
      const blobs = tape.frames.filter((x) => x.kind === 'blob');
      const payloads = tape.frames.reduce((n, x) => n + x.payloadLength, 0);
      const heads = tape.frames.reduce((n, x) => n + x.length, 0) - payloads;
      return {
        bytes: statSync(file).size,
        version: tape.version,
        frames: tape.frames.length,
        heads,
        headBytes: tape.frames.length ? heads / tape.frames.length : 0,
        payloads,
        byKind: [
          ...tape.frames.reduce(
            (m, x) => m.set(String(x.kind), (m.get(String(x.kind)) ?? 0) + x.payloadLength),
            new Map<string, number>(),
          ),
        ]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5),
        blobs: blobs.length,
        compressed: blobs.filter((x) => x.compressed).length,
      };
    };
    // Payloads past the content threshold leave the history as claims and go to the content store: the
    // Temporal side of a run is its history plus the content it added there (files new since `before`).
    const contentDir = process.env.JUKEBOX_CONTENT_DIR;
    const contentFiles = (): Set<string> => {
      if (!contentDir) return new Set();
      return new Set(
        (readdirSync(contentDir, { recursive: true }) as string[])
          .map((f) => path.join(contentDir, f))
          .filter((f) => statSync(f).isFile()),
      );
    };
    const measureRun = async (workflow: string, runInput: unknown, queue: string, dir: string) => {
      const before = contentFiles();
      const h = await start(workflow, runInput, queue);
      const added = [...contentFiles()].filter((f) => !before.has(f)).map((f) => readFileSync(f));
      const content = Buffer.concat(added);
      const history = await historyBytes(h);
      const tape = tapeOf(dir, h.workflowId);
      return {
        tape: tape.bytes,
        layout: tape,
        protobuf: history.protobuf + content.byteLength,
        gzip: history.gzip + (content.byteLength ? gzipSync(content).byteLength : 0),
        contentBytes: content.byteLength,
      };
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
      let sizes: {
        growing: Awaited<ReturnType<typeof measureRun>>;
        flat: Awaited<ReturnType<typeof measureRun>>;
      };
      const runAll = async <T>(workers: Worker[], fn: () => Promise<T>): Promise<T> =>
        workers.length ? workers[0]!.runUntil(() => runAll(workers.slice(1), fn)) : fn();
      const times = await runAll([off, on, flat], async () => {
        const t = await interleave(ROUNDS, {
          off: async () => void (await start('researchAgent', input, queues.off)),
          on: async () => void (await start('researchAgent', input, queues.on)),
        });
        // Sizes from runs of their own: a question of its own makes the growing chat's content new to the store.
        sizes = {
          growing: await measureRun(
            'researchAgent',
            { ...input, question: 'Walk it once more.' },
            queues.on,
            dirs.on,
          ),
          flat: await measureRun('flatAgent', { steps: STEPS }, queues.flat, dirs.flat),
        };
        return t;
      });
      const { growing, flat: flatSizes } = sizes!;
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
          'Temporal history (protobuf) + the payloads it keeps in the content store',
          growing.protobuf,
          `of which content store ${growing.contentBytes} bytes; target ratio <= 0.2; ${layoutNote(growing.layout, growing.protobuf)}`,
        ),
        result(
          `${STEPS}-step growing chat: tape bytes`,
          growing.tape,
          'bytes',
          'the same, gzip-compressed',
          growing.gzip,
        ),
        result(
          `${STEPS}-step flat run (same-sized requests): tape bytes`,
          flatSizes.tape,
          'bytes',
          'Temporal history (protobuf) + the payloads it keeps in the content store',
          flatSizes.protobuf,
          `bench/flat/agent.ts: one question a step, no history resent; of which content store ${flatSizes.contentBytes} bytes; target ratio <= 0.5; ${layoutNote(flatSizes.layout, flatSizes.protobuf)}`,
        ),
        result(
          `${STEPS}-step flat run (same-sized requests): tape bytes`,
          flatSizes.tape,
          'bytes',
          'the same, gzip-compressed',
          flatSizes.gzip,
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
