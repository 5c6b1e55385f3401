/**
 * The accounting quickstart's world for a test: a fresh copy of its data, the local model server on its script,
 * a Shadow Booth over the data and an in-process worker on the suite's dev server recording into `tapes`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ACCOUNTING_SCRIPT,
  type AccountingDemo,
  accountingBooth,
  prepareAccountingDemo,
} from '../../examples/accounting/demo';
import { accountingTools } from '../../examples/accounting/tools';
import type { ToolDefinition } from '../../src/agent/tools';
import { BoothRuntime, type ShadowBoothConfig } from '../../src/booth/shadowBooth';
import { localEndpoints } from '../../src/llm';
import { type ModelServer, startModelServer } from '../../src/testing/modelserver';
import { connectTestWorker } from './temporal';

export interface AccountingWorld {
  base: string;
  demo: AccountingDemo;
  tapes: string;
  model: ModelServer;
  booth: BoothRuntime;
  env: Awaited<ReturnType<typeof connectTestWorker>>;
  close(): Promise<void>;
}

export async function accountingWorld(
  name: string,
  options: {
    workflowsPath?: string;
    tools?: (demo: AccountingDemo, base: string) => ToolDefinition[];
    booth?: (config: ShadowBoothConfig, base: string) => ShadowBoothConfig;
  } = {},
): Promise<AccountingWorld> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), `jbx-${name}-`));
  const demo = await prepareAccountingDemo(path.join(base, 'demo'));
  const tapes = path.join(base, 'tapes');
  fs.mkdirSync(tapes);
  const model = await startModelServer({ script: ACCOUNTING_SCRIPT });
  const config = accountingBooth(demo);
  const booth = new BoothRuntime(options.booth ? options.booth(config, base) : config);
  const env = await connectTestWorker({
    endpoints: localEndpoints(model.url),
    tools: [...accountingTools, ...(options.tools?.(demo, base) ?? [])],
    ...(options.workflowsPath ? { workflowsPath: options.workflowsPath } : {}),
    booth,
    tape: { dir: tapes },
  });
  return {
    base,
    demo,
    tapes,
    model,
    booth,
    env,
    async close() {
      await env.close();
      await booth.close();
      await model.close();
    },
  };
}
