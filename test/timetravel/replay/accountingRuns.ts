import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AccountingInput, AccountingOutput } from '../../../examples/accounting/agent';
import { ACCOUNTING_SCRIPT, accountingBooth, prepareAccountingDemo } from '../../../examples/accounting/demo';
import { refundThresholdGate } from '../../../examples/accounting/gates';
import { accountingTools } from '../../../examples/accounting/tools';
import { BoothRuntime, type ShadowBoothConfig } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { approve, captureRunHistory, reject, startAgent, waitForApproval } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { connectTestWorker } from '../../support/temporal';

export const REFUND_120 = 'Refund $120 to customer C-1001: duplicate charge.';
export const REFUND_750 = 'Refund $750 to customer C-2002: service outage credit.';
/** What the failing verifier says; its verdict is "the gate itself failed (...)". */
export const VERIFIER_DOWN = 'the ledger checksum service did not answer';

export interface AccountingTapes {
  /** The quickstart's first run: a $120 refund the gate passes, committed. */
  committed: string;
  /** The quickstart's second run: a $750 refund the gate refuses, rolled back; the run completes. */
  refused: string;
  /** A $120 refund whose verifier fails (throws): refused and rolled back; the run completes. */
  verifierFailed: string;
  /** A $120 refund whose MCP part fails at commit (the notify server refuses the customer): compensated, rolled back, the run fails. */
  partFailed: string;
  /** The quickstart's third run: a $750 refund whose gate asks a person, who approves it: committed. */
  approved: string;
  /** The same ask, rejected by the person: rolled back; the run completes. */
  rejected: string;
}

export const APPROVAL_750 = 'Refund $750 to customer C-2002: service outage credit, for a person to approve.';
export const REJECTION = 'over the quarterly credit budget';

/**
 * The accounting agent's four booth stories, recorded on the real dev server into one tape folder (with each
 * run's history beside its tape and the workflow code by hash in `code/`): three workers, each with a Shadow
 * Booth over its own fresh copy of the demo.
 */
export async function recordAccountingRuns(): Promise<{
  tapeDir: string;
  tapes: AccountingTapes;
  model: ModelServer;
  close(): Promise<void>;
}> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'jbx-accounting-replay-'));
  const tapeDir = path.join(base, 'tapes');
  const model = await startModelServer({ script: ACCOUNTING_SCRIPT });
  const closers: Array<() => Promise<void>> = [async () => model.close().catch(() => {})];
  async function worker(
    name: string,
    options: { refuseCustomers?: string[]; gates?: ShadowBoothConfig['gates'] } = {},
  ) {
    const demo = await prepareAccountingDemo(path.join(base, name));
    const config = accountingBooth(
      demo,
      options.refuseCustomers ? { refuseCustomers: options.refuseCustomers } : {},
    );
    const booth = new BoothRuntime(options.gates ? { ...config, gates: options.gates } : config);
    const env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: accountingTools,
      booth,
      tape: { dir: tapeDir },
    });
    closers.unshift(async () => {
      await env.close();
      await booth.close();
    });
    return async (request: string, decide?: 'approve' | 'reject') => {
      const handle = await startAgent<AccountingInput, AccountingOutput>(
        'accountingAgent',
        { request, ...(decide ? { approval: { deciders: ['reviewer'] } } : {}) },
        {
          connection: env.connection,
          namespace: env.namespace,
          taskQueue: env.taskQueue,
        },
      );
      if (decide) {
        await waitForApproval(handle);
        if (decide === 'approve') await approve(handle, { by: 'reviewer', note: 'checked the outage log' });
        else await reject(handle, { by: 'reviewer', reason: REJECTION });
      }
      await handle.result().catch(() => {});
      return (await captureRunHistory(handle, tapeDir)).tapeFile;
    };
  }
  const quickstart = await worker('quickstart');
  // The refund gate composed with a verifier whose service is down: a check that could not run refuses.
  const verifierDown = await worker('verifier', {
    gates: {
      'refund-threshold': (changes) => {
        refundThresholdGate()(changes);
        throw new Error(VERIFIER_DOWN);
      },
    },
  });
  const notifyRefuses = await worker('refusing-notify', { refuseCustomers: ['C-1001'] });
  const tapes: AccountingTapes = {
    committed: await quickstart(REFUND_120),
    refused: await quickstart(REFUND_750),
    verifierFailed: await verifierDown(REFUND_120),
    partFailed: await notifyRefuses(REFUND_120),
    approved: await quickstart(APPROVAL_750, 'approve'),
    rejected: await quickstart(APPROVAL_750, 'reject'),
  };
  return {
    tapeDir,
    tapes,
    model,
    async close() {
      for (const close of closers) await close();
    },
  };
}
