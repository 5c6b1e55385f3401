import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, describe, expect, it } from 'vitest';
import type { ResearchOutput } from '../../../examples/sample/agent';
import { stepScript } from '../../../examples/sample/stepScript';
import { researchTools } from '../../../examples/sample/tools';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  type DevServerHandle,
  devServerTuningArgs,
  ensureTemporalCli,
  freePort,
  startDevServer,
} from '../../../servers/devserver';
import { localEndpoints } from '../../../src/llm';
import { bundleAgentWorkflows, createJukeboxWorker, startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { EXAMPLE_WORKFLOWS_PATH } from '../../support/temporal';

const BREAKER = { velocity: { maxOutputTokensPerMinute: 1e9, maxUsdPerMinute: 1e9 } };

describe('the dev server Jukebox starts is set up for short steps', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jukebox-tuned-'));
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('builds its flags from the defaults, with a caller able to change or drop any of them', () => {
    const args = devServerTuningArgs({
      dynamicConfig: {
        'history.transferProcessorMaxPollRPS': 100,
        'matching.numTaskqueueReadPartitions': null,
      },
      sqlitePragmas: { synchronous: 'full' },
    });
    expect(args).toContain('system.enableActivityEagerExecution=true');
    expect(args).toContain('history.transferProcessorMaxPollRPS=100');
    expect(args.some((a) => a.startsWith('matching.numTaskqueueReadPartitions='))).toBe(false);
    expect(args).toContain('synchronous=full');
    expect(args).toContain('journal_mode=wal');
    expect(Object.keys(DEV_SERVER_DYNAMIC_CONFIG)).toContain('system.enableEagerWorkflowStart');
  });

  it('keeps its SQLite in write-ahead-log mode and starts runs eagerly through a shared native connection', async () => {
    const port = await freePort();
    const dbFile = path.join(tmp, 'temporal.sqlite');
    const server: DevServerHandle = await startDevServer({
      cliPath: await ensureTemporalCli(),
      port,
      dbFile,
      headless: true,
      namespace: 'jukebox',
      log: () => {},
    });
    cleanup.push(() => server.stop());
    const model: ModelServer = await startModelServer({ script: stepScript(1) });
    cleanup.push(() => model.close());

    const native = await NativeConnection.connect({ address: server.address });
    cleanup.push(() => native.close());
    const worker = await createJukeboxWorker({
      connection: native,
      namespace: 'jukebox',
      taskQueue: 'tuned',
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      workflowBundle: await bundleAgentWorkflows(EXAMPLE_WORKFLOWS_PATH),
      tape: { dir: path.join(tmp, 'tapes') },
    });
    const input = { question: 'One lookup.', maxTurns: 3 };
    const start = (connection: Connection | NativeConnection) =>
      startAgent<typeof input, ResearchOutput>('researchAgent', input, {
        connection,
        namespace: 'jukebox',
        taskQueue: 'tuned',
        runOptions: { breaker: BREAKER },
      });
    const plain = await Connection.connect({ address: server.address });
    cleanup.push(() => plain.close());
    const [eager, queued] = await worker.runUntil(async () => {
      model.loadScript(stepScript(1));
      const viaWorker = await start(native);
      await viaWorker.result();
      model.loadScript(stepScript(1));
      const viaClient = await start(plain);
      await viaClient.result();
      return [viaWorker, viaClient];
    });
    // The native connection the worker polls with took the first workflow task straight from the start call;
    // a separate client connection cannot, and its run went through the task queue as before.
    expect((eager as unknown as { eagerlyStarted: boolean }).eagerlyStarted).toBe(true);
    expect((queued as unknown as { eagerlyStarted: boolean }).eagerlyStarted).toBe(false);
    // Write-ahead log: commits append to the -wal file instead of fsyncing a rollback journal each time.
    expect(fs.existsSync(`${dbFile}-wal`)).toBe(true);
  });
});
