import { mkdtempSync, readdirSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { researchAgent } from '../../../examples/sample/agent';
import { stepScript } from '../../../examples/sample/stepScript';
import { researchTools } from '../../../examples/sample/tools';
import { localEndpoints } from '../../../src/llm';
import { tapeFileName } from '../../../src/recorder';
import { readTape, verifyTape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { replayTape } from '../../../src/timetravel/replay';
import { connectTestWorker } from '../../support/temporal';

const RUNS = 200;
/** Tool-calling model turns of each run; the run's last model call answers. */
const STEPS = 10;
const MAX_OPEN_TAPES = 4;

/** Descriptors this process (the worker) holds on tape files right now. */
function openTapeFiles(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).endsWith('.jbx')) n++;
    } catch {
      // Closed between the listing and the readlink.
    }
  }
  return n;
}

describe('one worker running many agents at once', () => {
  let model: ModelServer;
  let tapes: string;
  let env: Awaited<ReturnType<typeof connectTestWorker>>;

  beforeAll(async () => {
    model = await startModelServer({ script: stepScript(STEPS) });
    tapes = mkdtempSync(path.join(os.tmpdir(), 'jbx-many-runs-'));
    env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      // Far fewer tape writers than runs: nearly every append finds its tape's writer closed for another's.
      tape: { dir: tapes, maxOpenTapes: MAX_OPEN_TAPES },
    });
  });

  afterAll(async () => {
    await env?.close();
    await model?.close();
  });

  it(`completes ${RUNS} concurrent ${STEPS}-step tool loops through ${MAX_OPEN_TAPES} tape writers, every tape whole`, async () => {
    let peakTapeFiles = 0;
    const sampler = setInterval(() => {
      peakTapeFiles = Math.max(peakTapeFiles, openTapeFiles());
    }, 20);
    const handles = await Promise.all(
      Array.from({ length: RUNS }, () =>
        startAgent<Record<string, unknown>, { answer: string; turns: number }>(
          'researchAgent',
          { question: 'Walk the knowledge base.', maxTurns: STEPS + 2 },
          {
            connection: env.connection,
            namespace: env.namespace,
            taskQueue: env.taskQueue,
            breaker: false,
          },
        ),
      ),
    );
    const results = await Promise.all(handles.map((h) => h.result())).finally(() => clearInterval(sampler));

    for (const r of results)
      expect(r.output).toEqual({ answer: `Done after ${STEPS} lookups.`, turns: STEPS + 1 });
    // Every model call once: a step retried after a recording failure would have called the model again.
    expect(model.requestCount()).toBe(RUNS * (STEPS + 1));
    expect(peakTapeFiles).toBeGreaterThan(0);
    expect(peakTapeFiles).toBeLessThanOrEqual(MAX_OPEN_TAPES);

    const files = await Promise.all(
      handles.map(async (h) => path.join(tapes, tapeFileName(h.workflowId, (await h.describe()).runId))),
    );
    for (const file of files) {
      expect(verifyTape(file)).toMatchObject({ ok: true, sealed: true, tornTail: null, firstBadFrame: null });
      const frames = readTape(file).frames;
      expect(frames.filter((f) => f.kind === 'activity.error')).toEqual([]);
      // Each model and tool step once: 11 model calls and 10 tool calls.
      expect(frames.filter((f) => f.kind === 'activity.complete')).toHaveLength(2 * STEPS + 1);
      const replay = await replayTape(file, { agent: researchAgent as never });
      expect(replay).toMatchObject({ status: 'match', divergence: null, replayedOutcome: 'completed' });
    }
  }, 1_200_000);
});
