import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageOutput } from '../../../examples/pages/agent';
import { pageScript } from '../../../examples/pages/pageScript';
import { pageText, pageTool } from '../../../examples/pages/tools';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { localEndpoints } from '../../../src/llm';
import { type ContentStore, FolderContentStore } from '../../../src/recorder/content';
import { bundleAgentWorkflows, createJukeboxWorker, startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { EXAMPLE_WORKFLOWS_PATH } from '../../support/temporal';

const HistoryEvent = temporal.api.history.v1.HistoryEvent;
const bytesOf = (e: unknown) => HistoryEvent.encode(HistoryEvent.fromObject(e as object)).finish().length;

/** A content store that silently drops the blobs `lose` picks: a store that lost them, or a misconfigured one. */
class LosingStore implements ContentStore {
  readonly lost = new Set<string>();
  constructor(
    private readonly inner: ContentStore,
    private readonly lose: (bytes: Uint8Array) => boolean,
  ) {}
  get location() {
    return this.inner.location;
  }
  put(blobs: ReadonlyMap<string, Uint8Array>) {
    const kept = new Map<string, Uint8Array>();
    for (const [h, b] of blobs) {
      if (this.lose(b)) this.lost.add(h);
      else kept.set(h, b);
    }
    return this.inner.put(kept);
  }
  get(hash: string) {
    return this.inner.get(hash);
  }
  close() {
    return this.inner.close();
  }
}

describe('payloads past the threshold live in the content store, not in the history', () => {
  let env: TestWorkflowEnvironment;
  let model: ModelServer;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const config = temporalConfigFromEnv();
  const contentDir = process.env.JUKEBOX_CONTENT_DIR!;

  async function worker(tools: ReturnType<typeof pageTool>[], content?: ContentStore) {
    const taskQueue = `content-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
    const w = await createJukeboxWorker({
      connection: env.nativeConnection,
      namespace: config.namespace,
      taskQueue,
      endpoints: localEndpoints(model.url),
      tools,
      workflowBundle: await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH),
      tape: { dir: mkdtempSync(path.join(os.tmpdir(), 'jukebox-content-tapes-')) },
      // No payloads kept in the worker's memory either: it reads every reference from the store, as a worker
      // on another host does.
      ...(content ? { content: { store: content, cacheBytes: 0 } } : {}),
    });
    workers.push({ worker: w, running: w.run() });
    return { taskQueue };
  }

  beforeAll(async () => {
    env = await TestWorkflowEnvironment.createFromExistingServer({
      address: config.address,
      namespace: config.namespace,
    });
    model = await startModelServer({ script: pageScript(1) });
  });
  afterAll(async () => {
    for (const w of workers) w.worker.shutdown();
    await Promise.all(workers.map((w) => w.running));
    await model?.close();
    await env?.teardown();
  });

  it('a 5 MB tool output and a 3 MB model answer pass, each stored once, with no history event over 2 KB', async () => {
    model.loadScript(pageScript(1, { answerChars: 3 * 1024 * 1024 }));
    const { taskQueue } = await worker([pageTool(5 * 1024 * 1024)]);
    const handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages: 1 },
      { connection: env.connection, namespace: config.namespace, taskQueue, breaker: false },
    );
    const { output } = await handle.result();
    expect(output.readChars).toBe(5 * 1024 * 1024);
    expect(output.answer).toHaveLength(3 * 1024 * 1024);
    expect(output.answer.startsWith('Read 1 pages.')).toBe(true);
    const events = (await handle.fetchHistory()).events ?? [];
    const largest = Math.max(...events.map(bytesOf));
    expect(largest).toBeLessThan(2048);
    // The page is one blob however often it was sent: as the tool's result and in the next model request.
    const page = Buffer.from(JSON.stringify(pageText(0, 5 * 1024 * 1024)));
    const sameSize = readdirSync(contentDir).filter(
      (f) => statSync(path.join(contentDir, f)).size === page.length,
    );
    expect(sameSize).toHaveLength(1);
  });

  it('history per step stays the same size while the conversation grows 8 KB a step', async () => {
    model.loadScript(pageScript(40));
    const { taskQueue } = await worker([pageTool(8 * 1024)]);
    const handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages: 40 },
      { connection: env.connection, namespace: config.namespace, taskQueue, breaker: false },
    );
    const { output } = await handle.result();
    expect(output.turns).toBe(41);
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'llmStep',
    );
    expect(scheduled).toHaveLength(41);
    // Step 2's request holds one page, step 80's holds 40 (320 KB): their events are the same size.
    const first = bytesOf(scheduled[1]);
    const last = bytesOf(scheduled.at(-1));
    expect(Math.abs(last - first)).toBeLessThan(16);
    const total = events.reduce((n, e) => n + bytesOf(e), 0);
    expect(total / (41 + 40)).toBeLessThan(2048);
  });

  it('a step whose content the store lost fails the run at once, naming the step and the blob', async () => {
    model.loadScript(pageScript(5));
    const store = new LosingStore(new FolderContentStore(contentDir, { cacheBytes: 0 }), (b) =>
      Buffer.from(b).includes('Page 2 of the archive'),
    );
    // Pages of a size no other test reads: content addressing would find another run's copy of page 2.
    const { taskQueue } = await worker([pageTool(8 * 1024 + 7)], store);
    const handle = await startAgent<unknown, PageOutput>(
      'pageAgent',
      { pages: 5 },
      { connection: env.connection, namespace: config.namespace, taskQueue, breaker: false },
    );
    const failure = await handle.result().then(
      () => undefined,
      (err: unknown) => err as { cause?: { type?: string; message?: string } },
    );
    expect(failure?.cause?.type).toBe('ContentMissingError');
    // read_page(2) is step 5 (llm 0, tool 1, llm 2, tool 3, llm 4, tool 5): its result is the lost page.
    expect(failure?.cause?.message).toMatch(/the result of step 5 \(toolStep\) refers to blob [0-9a-f]{64}/);
    const hash = /blob ([0-9a-f]{64})/.exec(failure!.cause!.message!)![1]!;
    expect(store.lost.has(hash)).toBe(true);
    const { status } = await handle.describe();
    expect(status.name).toBe('FAILED');
  });
});
