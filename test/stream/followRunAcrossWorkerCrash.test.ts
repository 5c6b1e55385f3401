import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { readUIMessageStream, type UIMessage, type UIMessageChunk, uiMessageChunkSchema } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepScript } from '../../examples/sample/stepScript';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { startViewer, type Viewer } from '../../src/cli/viewer';
import { tapeFileName } from '../../src/recorder/naming';
import { BlobRef, chunkEntries, derefValue, readTape } from '../../src/recorder/tape';
import {
  followRun,
  followRunAsUIMessageStream,
  type JukeboxUIMessageChunk,
  type RunItem,
} from '../../src/stream';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { waitUntil } from '../support/history';
import { startResearchRun } from '../support/researchRun';
import { openSse } from '../support/sseClient';
import { spawnWorker, type WorkerProcess } from '../support/workerProcess';

const STEPS = 4;
const FOLLOWERS = 100;

/** The kinds of frame a follower gets an item for, and the item kind each gives. */
const ITEM_KIND: Record<string, RunItem['kind']> = {
  'activity.start': 'step',
  'llm.request': 'request',
  'llm.chunk': 'token',
  'llm.response': 'response',
  'tool.call': 'tool.call',
  'tool.result': 'tool.result',
  'activity.complete': 'step.end',
  'activity.error': 'step.end',
  outcome: 'outcome',
};

async function collect(workflowId: string, tapesDir: string, after?: number, signal?: AbortSignal) {
  const items: RunItem[] = [];
  for await (const item of followRun(workflowId, {
    tapesDir,
    ...(after !== undefined ? { after } : {}),
    signal,
  }))
    items.push(item);
  return items;
}

/** A follower that drops its connection every `every` items and resumes after the last position it saw. */
async function reconnecting(workflowId: string, tapesDir: string, every: number) {
  const items: RunItem[] = [];
  let reconnects = 0;
  for (;;) {
    const stop = new AbortController();
    let got = 0;
    const after = items.at(-1)?.position;
    for await (const item of followRun(workflowId, {
      tapesDir,
      signal: stop.signal,
      ...(after !== undefined ? { after } : {}),
    })) {
      items.push(item);
      if (item.kind === 'outcome') return { items, reconnects };
      if (++got === every) {
        stop.abort();
        break;
      }
    }
    reconnects++;
  }
}

/**
 * A browser-like follower of `jbx view`'s event stream that drops its connection every `every` events and
 * reconnects with the id of the last event it got as Last-Event-ID, as EventSource does.
 */
async function sseReconnecting(viewer: Viewer, id: string, every: number) {
  const items: RunItem[] = [];
  let reconnects = 0;
  let lastEventId: string | undefined;
  for (;;) {
    const stop = new AbortController();
    const res = await openSse(`${viewer.url}api/runs/${encodeURIComponent(id)}/events`, {
      signal: stop.signal,
      ...(lastEventId !== undefined ? { lastEventId } : {}),
    });
    if (res.status === 404) {
      // The tape appears when the worker records the first step.
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    expect(res.status).toBe(200);
    let got = 0;
    for await (const e of res.events) {
      if (e.event === 'end') return { items, reconnects };
      if (e.event === 'failure') throw new Error(`event stream failed: ${e.data}`);
      items.push(JSON.parse(e.data) as RunItem);
      lastEventId = e.id;
      if (++got === every) {
        stop.abort();
        break;
      }
    }
    reconnects++;
  }
}

describe('followers of a run whose worker is SIGKILLed mid-stream', () => {
  let model: ModelServer;
  let connection: Connection;
  let tapesDir: string;
  const workers: WorkerProcess[] = [];
  let first: RunItem[];
  let crowd: RunItem[][];
  let resumed: { items: RunItem[]; reconnects: number };
  let uiChunks: JukeboxUIMessageChunk[];
  let uiMessage: UIMessage | undefined;
  let tapeFile: string;
  let killedStep = -1;
  let viewer: Viewer;
  let overSse: { items: RunItem[]; reconnects: number };

  beforeAll(async () => {
    tapesDir = mkdtempSync(path.join(os.tmpdir(), 'jbx-follow-'));
    // ~20 chunks of 30 ms: each model step streams for about 0.6 s, written to the tape every 50 ms.
    model = await startModelServer({ script: stepScript(STEPS, { chunkDelayMs: 30, chunkSize: 4 }) });
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
    const { namespace } = temporalConfigFromEnv();
    const taskQueue = `follow-crash-${Date.now()}`;
    const env = { JUKEBOX_TASK_QUEUE: taskQueue, JUKEBOX_MODEL_URL: model.url, JUKEBOX_TAPE_DIR: tapesDir };
    workers.push(await spawnWorker(env));
    const handle = await startResearchRun({ connection, namespace, taskQueue, steps: STEPS });
    const workflowId = handle.workflowId;

    // Followers start with the run: one that watches for a live token to kill the worker under, 100 that read
    // along, one that keeps disconnecting.
    const seen: RunItem[] = [];
    const watcher = (async () => {
      for await (const item of followRun(workflowId, { tapesDir })) seen.push(item);
      return seen;
    })();
    const many = Array.from({ length: FOLLOWERS }, () => collect(workflowId, tapesDir));
    const again = reconnecting(workflowId, tapesDir, 7);
    // And one through `jbx view`'s server-sent events, reconnecting as a browser does.
    viewer = await startViewer({ dir: tapesDir });
    const sse = sseReconnecting(
      viewer,
      path.basename(tapeFileName(workflowId, (await handle.describe()).runId), '.jbx'),
      9,
    );
    // The AI SDK's own reader builds the message from the UI message stream, as useChat would.
    const ui = (async () => {
      const [mine, theirs] = followRunAsUIMessageStream(workflowId, { tapesDir }).tee();
      const chunks: JukeboxUIMessageChunk[] = [];
      const copy = (async () => {
        for await (const c of mine) chunks.push(c);
      })();
      let last: UIMessage | undefined;
      // Jukebox's chunk type is the AI SDK's: this assignment is checked by the compiler.
      const stream: ReadableStream<UIMessageChunk> = theirs;
      for await (const m of readUIMessageStream({ stream, terminateOnError: true })) last = m;
      await copy;
      return { chunks, last };
    })();

    // Kill the worker while the second model step streams: its tokens are on the tape, its response is not.
    await waitUntil('a live token of the second model step', () => {
      const requests = seen.filter((i) => i.kind === 'request');
      const second = requests[1];
      return (
        second !== undefined &&
        seen.some((i) => i.kind === 'token' && i.step === second.step && i.position > second.position)
      );
    });
    killedStep = seen.filter((i) => i.kind === 'request')[1]!.step;
    expect(seen.some((i) => i.kind === 'response' && i.step === killedStep)).toBe(false);
    await workers[0]!.kill('SIGKILL');
    workers.push(await spawnWorker(env));

    const result = await handle.result();
    expect(result.output.answer).toBe(`Done after ${STEPS} lookups.`);
    first = await watcher;
    crowd = await Promise.all(many);
    resumed = await again;
    overSse = await sse;
    ({ chunks: uiChunks, last: uiMessage } = await ui);
    tapeFile = path.join(tapesDir, readdirSync(tapesDir).find((n) => n.endsWith('.jbx'))!);
  }, 180_000);

  afterAll(async () => {
    await viewer?.close();
    for (const w of workers) await w.kill();
    await connection?.close();
    await model?.close();
    rmSync(tapesDir, { recursive: true, force: true });
  });

  it('gives one item per frame of the finished tape, once each, in tape order', () => {
    const tape = readTape(tapeFile);
    expect(tape.sealed).toBe(true);
    const expected = tape.frames
      .filter((f) => f.kind !== undefined && ITEM_KIND[f.kind] !== undefined)
      .map((f) => ({ position: f.index, kind: ITEM_KIND[f.kind!] }));
    expect(first.map((i) => ({ position: i.position, kind: i.kind }))).toEqual(expected);
    // The tokens are the chunks' own text, batch by batch (each batch's text stored once, as a blob).
    const chunkFrames = tape.frames.filter((f) => f.kind === 'llm.chunk');
    // (a batch of only tool-call pieces has no text, and no text blob).
    expect(chunkFrames.some((f) => (f.payload as { text?: unknown }).text instanceof BlobRef)).toBe(true);
    for (const f of chunkFrames) {
      const { chunks } = f.payload as { chunks: unknown };
      const packed = (chunks instanceof BlobRef ? derefValue(tape, chunks) : chunks) as unknown[][];
      expect(packed.some((c) => typeof c[2] === 'string')).toBe(false);
    }
    const tokens = first.filter((i) => i.kind === 'token');
    expect(tokens.map((t) => t.text)).toEqual(
      chunkFrames.map((f) =>
        chunkEntries(f.payload, tape.blobs)
          .map((c) => c[2] ?? '')
          .join(''),
      ),
    );
    expect(first.at(-1)).toMatchObject({ kind: 'outcome', status: 'completed' });
  });

  it('streams the killed step twice, its retry marked, and each final attempt spells its response exactly', () => {
    const start = first.find((i) => i.kind === 'step' && i.step === killedStep && i.attempt === 2);
    expect(start).toMatchObject({ kind: 'step', activityType: 'llmStep', retryOf: 1 });
    const killedTokens = first.filter((i) => i.kind === 'token' && i.step === killedStep && i.attempt === 1);
    expect(killedTokens.length).toBeGreaterThan(0);
    const responses = first.filter((i) => i.kind === 'response');
    expect(responses).toHaveLength(STEPS + 1);
    for (const r of responses) {
      if (r.kind !== 'response') continue;
      const text = first
        .filter((i) => i.kind === 'token' && i.step === r.step && i.attempt === r.attempt)
        .map((i) => (i.kind === 'token' ? i.text : ''))
        .join('');
      expect(text).toBe(r.text);
    }
    expect(responses.at(-1)).toMatchObject({ text: `Done after ${STEPS} lookups.` });
    // The script's reply of every step, in full, each once among the final attempts.
    expect(responses.slice(0, -1).map((r) => (r.kind === 'response' ? r.text.split(':')[0] : ''))).toEqual(
      Array.from({ length: STEPS }, (_, i) => `Step ${i}`),
    );
  });

  it('gives 100 concurrent followers the same sequence', () => {
    expect(crowd).toHaveLength(FOLLOWERS);
    for (const items of crowd) expect(items).toEqual(first);
  });

  it('gives a follower that disconnects and resumes after its last position no gap and no duplicate', () => {
    expect(resumed.reconnects).toBeGreaterThan(3);
    expect(resumed.items).toEqual(first);
  });

  it("gives jbx view's event stream, reconnected with Last-Event-ID, every item once, in order", () => {
    expect(overSse.reconnects).toBeGreaterThan(3);
    // Items as JSON on the wire: what the browser parses.
    expect(overSse.items).toEqual(JSON.parse(JSON.stringify(first)));
  });

  it("streams the run as the AI SDK's UI message stream: text per attempt, tool parts, the retry and the outcome", async () => {
    const schema = uiMessageChunkSchema();
    for (const c of uiChunks) expect((await schema.validate!(c)).success, JSON.stringify(c)).toBe(true);
    expect(uiChunks[0]).toEqual({ type: 'start', messageId: expect.any(String) });
    expect(uiChunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    const parts = uiMessage!.parts;
    const responses = first.filter((i) => i.kind === 'response');
    const retryAt = parts.findIndex((p) => p.type === 'data-jukebox-retry');
    const retry = parts[retryAt] as { data: { supersededTextId: string } };
    expect(retry.data.supersededTextId).toBe(`s${killedStep}a1`);
    // The superseded attempt's text is the part just before the retry names it: a beginning of that step's
    // answer. The other text parts are the responses, in order.
    const supersededAt = parts
      .slice(0, retryAt)
      .map((p) => p.type)
      .lastIndexOf('text');
    const superseded = parts[supersededAt] as { text: string };
    const killedResponse = responses.find((r) => r.step === killedStep && r.kind === 'response');
    expect(superseded.text.length).toBeGreaterThan(0);
    expect(killedResponse?.kind === 'response' && killedResponse.text.startsWith(superseded.text)).toBe(true);
    const texts = parts.filter((p, i) => p.type === 'text' && i !== supersededAt) as { text: string }[];
    expect(texts.map((t) => t.text)).toEqual(responses.map((r) => (r.kind === 'response' ? r.text : '')));
    const tools = parts.filter((p) => p.type === 'dynamic-tool') as { state: string; toolName: string }[];
    expect(tools).toHaveLength(STEPS);
    expect(tools.every((t) => t.state === 'output-available' && t.toolName === 'lookup_fact')).toBe(true);
    expect(parts.find((p) => p.type === 'data-jukebox-outcome')).toMatchObject({
      data: { status: 'completed' },
    });
  });
});
