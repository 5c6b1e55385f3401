import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import type { ToolDefinition } from '../../src/agent/tools';
import type { LlmEndpoints } from '../../src/llm';
import type { TapeRecorderOptions } from '../../src/recorder';
import { bundleAgentWorkflows, createJukeboxWorker, type JukeboxWorkerOptions } from '../../src/temporal';

/** The example agents' workflows module, which most tests run. */
export const EXAMPLE_WORKFLOWS_PATH = path.join(__dirname, '../../examples/workflows.ts');

// Bundling takes seconds; a test file bundles each workflows module once.
const bundles = new Map<string, ReturnType<typeof bundleAgentWorkflows>>();

/**
 * Connects to the suite's real dev server (started by test/globalSetup.ts) and runs an in-process worker on a
 * task queue of the test's own, for the whole file: runUntil would stop it after the first run.
 */
export async function connectTestWorker(options: {
  endpoints: LlmEndpoints;
  tools: ToolDefinition[];
  workflowsPath?: string;
  /** Default: record into a fresh temporary folder, keeping tapes out of the repository's .jukebox/tapes. */
  tape?: false | TapeRecorderOptions;
  booth?: JukeboxWorkerOptions['booth'];
  sweeper?: JukeboxWorkerOptions['sweeper'];
}) {
  const config = temporalConfigFromEnv();
  const workflowsPath = options.workflowsPath ?? EXAMPLE_WORKFLOWS_PATH;
  let bundle = bundles.get(workflowsPath);
  if (!bundle) {
    bundle = bundleAgentWorkflows(workflowsPath);
    bundles.set(workflowsPath, bundle);
  }
  const env = await TestWorkflowEnvironment.createFromExistingServer({
    address: config.address,
    namespace: config.namespace,
  });
  const taskQueue = `test-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
  const worker: Worker = await createJukeboxWorker({
    connection: env.nativeConnection,
    namespace: config.namespace,
    taskQueue,
    endpoints: options.endpoints,
    tools: options.tools,
    workflowBundle: await bundle,
    tape: options.tape ?? { dir: mkdtempSync(path.join(os.tmpdir(), 'jukebox-test-tapes-')) },
    ...(options.booth ? { booth: options.booth } : {}),
    ...(options.sweeper !== undefined ? { sweeper: options.sweeper } : {}),
  });
  const running = worker.run();
  return {
    worker,
    connection: env.connection as Connection,
    namespace: config.namespace,
    taskQueue,
    async close() {
      worker.shutdown();
      await running;
      await env.teardown();
    },
  };
}
