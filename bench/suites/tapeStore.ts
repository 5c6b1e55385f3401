/**
 * The tape store under load: steps recorded through the object store (versitygw, the S3-compatible server
 * the tests use, on this machine) against the local folder, in the same run; and how a 1,000-step and a
 * 10,000-step run's tape write and read back for replay, to show both grow linearly with the steps.
 *
 * A step here is what the recorder writes for one model step of a worker: ActivityTape's two flushes
 * (activity.start + llm.request, then llm.chunk + llm.response + activity.complete), each one withTape
 * session, so one PUT (object store) or one lock round trip and one fsync (folder) per flush.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startObjectServer } from '../../servers/objectserver';
import {
  FolderTapeStore,
  ObjectTapeStore,
  Redactor,
  type RunIdentity,
  type TapeStore,
} from '../../src/recorder';
import { ActivityTape } from '../../src/recorder/activityTape';
import { verifyTape } from '../../src/recorder/tape';
import { readTimeline } from '../../src/timetravel/replay';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchSuite, result } from '../harness';

const THROUGHPUT_STEPS = 300;
const LINEAR_STEPS = [1_000, 10_000] as const;
const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const TEXT = 'looked up the next fact and noted where it came from. '.repeat(4);

/** Records `steps` steps; returns the time of the first and of the last tenth of them (ms). */
async function recordSteps(
  store: TapeStore,
  run: RunIdentity,
  steps: number,
): Promise<{ firstTenthMs: number; lastTenthMs: number }> {
  const tenth = Math.max(1, Math.floor(steps / 10));
  let t0 = performance.now();
  let firstTenthMs = 0;
  const deps = { store, redactor: new Redactor(), costOf: () => 0.0001, nowUs };
  for (let step = 0; step < steps; step++) {
    if (step === tenth) firstTenthMs = performance.now() - t0;
    if (step === steps - tenth) t0 = performance.now();
    const id = { workflowId: run.workflowId, runId: run.runId, activityId: String(step + 1), attempt: 1 };
    const t = new ActivityTape(deps, run, id, 'llmStep', step);
    const messages = [
      { role: 'system', content: 'You are a careful researcher.' },
      { role: 'user', content: `Step ${step}: what is next?` },
    ];
    t.start({ request: { provider: 'openai', model: 'gpt-4o-mini', messages } }, []);
    await t.llmRequest({ provider: 'openai', model: 'gpt-4o-mini', messages } as never);
    for (let c = 0; c < 4; c++)
      t.llmChunk({ index: c, offsetMs: c * 5, text: TEXT.slice(c * 50, c * 50 + 50) } as never);
    t.llmResponse({
      id: `r${step}`,
      provider: 'openai',
      model: 'gpt-4o-mini',
      text: TEXT,
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 40, outputTokens: 50 },
      chunks: 4,
    } as never);
    await t.complete({ text: TEXT, toolCalls: [], usage: { inputTokens: 40, outputTokens: 50 } });
  }
  const lastTenthMs = performance.now() - t0;
  await store.withTape(run, (s) => s.seal({ status: 'completed' }, steps));
  return { firstTenthMs, lastTenthMs };
}

const runOf = (name: string): RunIdentity => ({
  workflowId: `bench-${name}-${Date.now().toString(36)}`,
  runId: 'run-1',
  workflowType: 'researchAgent',
  taskQueue: 'bench',
  agentCodeHash: 'blake3:bench',
});

export const tapeStoreSuite: BenchSuite = {
  name: 'tapeStore',
  breaker: NO_AGENT_NOTE,
  async run() {
    const server = await startObjectServer({ log: (m) => process.stderr.write(`bench: ${m}\n`) });
    const bucket = await server.bucket();
    const prefix = `bench-${Date.now().toString(36)}/`;
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-store-'));
    const folder = () => new FolderTapeStore({ dir: path.join(tmp, 'folder'), fsync: 'step' });
    const object = () =>
      new ObjectTapeStore({ bucket, prefix, cacheDir: mkdtempSync(path.join(tmp, 'cache-')) });
    const timed = async (fn: () => Promise<unknown>) => {
      const t0 = performance.now();
      await fn();
      return performance.now() - t0;
    };
    try {
      // Append throughput, same steps, same process, one after the other.
      const f = folder();
      const folderMs = await timed(() => recordSteps(f, runOf('folder'), THROUGHPUT_STEPS));
      await f.close();
      const o = object();
      const objectMs = await timed(() => recordSteps(o, runOf('object'), THROUGHPUT_STEPS));
      const rows = [
        result(
          `tape append, object store (versitygw S3), ${THROUGHPUT_STEPS} steps`,
          (THROUGHPUT_STEPS / objectMs) * 1000,
          'steps/s',
          'local folder, fsync per step',
          (THROUGHPUT_STEPS / folderMs) * 1000,
          'two conditional PUTs per step vs two lock round trips and fsyncs per step',
        ),
      ];

      // Linear growth: write, fetch (object store) and read for replay at 1k and 10k steps.
      const at: Record<string, Record<number, number>> = {
        write: {},
        fetch: {},
        replay: {},
        objectWrite: {},
      };
      // Within the 10k run: does a step cost more when the tape is long? Last tenth of the steps vs first tenth.
      const tenths: Record<string, { firstTenthMs: number; lastTenthMs: number }> = {};
      for (const steps of LINEAR_STEPS) {
        const store = folder();
        const run = runOf(`linear${steps}`);
        at.write![steps] = await timed(async () => {
          tenths.folder = await recordSteps(store, run, steps);
        });
        await store.close();
        const file = store.pathFor(run.workflowId, run.runId);
        // Best of three: reading is short enough for a busy machine's noise to dominate one run.
        const reads: number[] = [];
        for (let i = 0; i < 3; i++)
          reads.push(
            await timed(async () => {
              const t = readTimeline(file);
              if (t.steps.length !== steps) throw new Error(`read ${t.steps.length} steps, wrote ${steps}`);
            }),
          );
        at.replay![steps] = Math.min(...reads);
        const obj = object();
        const orun = runOf(`objlinear${steps}`);
        at.objectWrite![steps] = await timed(async () => {
          tenths.object = await recordSteps(obj, orun, steps);
        });
        const copy = path.join(tmp, `fetched-${steps}.jbx`);
        at.fetch![steps] = await timed(async () => {
          await object().download(obj.keyFor(orun.workflowId, orun.runId), copy);
        });
        if (!verifyTape(copy).ok) throw new Error('the fetched tape does not verify');
        process.stderr.write(
          `bench: ${steps} steps: ${statSync(file).size} bytes; write ${at.write![steps]!.toFixed(0)} ms, read ${at.replay![steps]!.toFixed(0)} ms, object write ${at.objectWrite![steps]!.toFixed(0)} ms, fetch ${at.fetch![steps]!.toFixed(0)} ms\n`,
        );
      }
      const [small, big] = LINEAR_STEPS;
      const linear = (what: string, key: string, note: string) =>
        result(
          `${what}, ${big} steps`,
          at[key]![big]!,
          'ms',
          `${small} steps x ${big / small}`,
          at[key]![small]! * (big / small),
          note,
        );
      rows.push(
        linear('tape write, local folder', 'write', 'ratio 1 = linear in steps'),
        linear('tape read for replay (readTimeline), local folder', 'replay', 'ratio 1 = linear in steps'),
        linear('tape write, object store', 'objectWrite', 'ratio 1 = linear in steps'),
        linear('tape fetch from object store (all segments)', 'fetch', 'one GET per flush: ratio 1 = linear'),
        ...(['folder', 'object'] as const).map((k) =>
          result(
            `${k === 'folder' ? 'local folder' : 'object store'}: last 1,000 of ${big} steps`,
            tenths[k]!.lastTenthMs,
            'ms',
            'first 1,000 steps of the same run',
            tenths[k]!.firstTenthMs,
            'ratio 1 = a step costs the same on a long tape',
          ),
        ),
      );
      return rows;
    } finally {
      bucket.destroy();
      rmSync(tmp, { recursive: true, force: true });
    }
  },
};
