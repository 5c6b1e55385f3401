/**
 * Every activity an agent run schedules heartbeats, on the default run options: the model and tool steps, each
 * part of the commit, the rollback, the fork's restore and the approval activities all carry the run's heartbeat
 * timeout, so the worker's keep-alive timer keeps each one alive while it runs and a dead worker is noticed within
 * that timeout (the long-step tests show both with steps that take minutes).
 */
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingInput, AccountingOutput } from '../../../examples/accounting/agent';
import { tapeFileName } from '../../../src/recorder';
import { approve, reject, startAgent, startFork, waitForApproval } from '../../../src/temporal';
import { DEFAULT_RUN_OPTIONS } from '../../../src/temporal/workflow/runOptions';
import { type AccountingWorld, accountingWorld } from '../../support/accountingWorld';

const REFUND_750 = 'Refund $750 to customer C-2002: service outage credit.';

type History = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>>;

/** Each scheduled activity: its type, heartbeat timeout and start-to-close timeout, in milliseconds. */
function scheduled(history: History) {
  const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    d ? Number(d.seconds ?? 0) * 1_000 + Math.round((d.nanos ?? 0) / 1e6) : 0;
  return (history.events ?? []).flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    return a
      ? [
          {
            type: String(a.activityType?.name),
            heartbeatMs: ms(a.heartbeatTimeout),
            startToCloseMs: ms(a.startToCloseTimeout),
          },
        ]
      : [];
  });
}

describe('every step activity heartbeats', () => {
  let world: AccountingWorld;

  beforeAll(async () => {
    world = await accountingWorld('step-heartbeats');
  });
  afterAll(async () => {
    await world?.close();
  });

  it('a run that asks a person and commits, and its fork that is rejected and rolls back', async () => {
    const { env, tapes } = world;
    const where = { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue };
    const run = await startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: REFUND_750, approval: { deciders: ['reviewer'] } },
      where,
    );
    await waitForApproval(run);
    await approve(run, { by: 'reviewer' });
    expect((await run.result()).output.committed).toBe(true);

    const parentTape = path.join(tapes, tapeFileName(run.workflowId, (await run.describe()).runId));
    const fork = await startFork({ parentTape, atStep: 1, ...where });
    await waitForApproval(fork.handle);
    await reject(fork.handle, { by: 'reviewer', reason: 'once is enough' });
    expect(((await fork.handle.result()) as { output: AccountingOutput }).output.committed).toBe(false);

    const activities = [
      ...scheduled(await run.fetchHistory()),
      ...scheduled(await fork.handle.fetchHistory()),
    ];
    expect(new Set(activities.map((a) => a.type))).toEqual(
      new Set([
        'llmStep',
        'toolStep',
        'approvalRequested',
        'approvalDecided',
        'boothVerify',
        'boothCommitFiles',
        'boothCommitSql',
        'boothCommitMcp',
        'boothFinish',
        'beginFork',
        'boothRollback',
      ]),
    );
    const { heartbeatTimeoutMs, stepTimeoutMs } = DEFAULT_RUN_OPTIONS;
    for (const a of activities) expect(a, a.type).toMatchObject({ heartbeatMs: heartbeatTimeoutMs });
    // The fork's restore and the approval activities may take as long as a step.
    for (const a of activities.filter((x) => /^(beginFork|approval)/.test(x.type)))
      expect(a, a.type).toMatchObject({ startToCloseMs: stepTimeoutMs });
  });
});
