/** What `jbx approve` and `jbx reject` share: the Temporal connection, who decides, and the result's wording. */
import { JukeboxError } from '../../errors/JukeboxError';
import { approve, type DecideOptions, type DecisionResult, reject } from '../../temporal/client/approvals';
import { type ConnectedClient, connectClient } from '../../temporal/client/connect';
import type { CommandArgs } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { deciderOf } from './decider';

/** Runs `fn` with a connected client; a Jukebox error (run finished, not pending, refused) is exit code 1. */
export async function withTemporal<T>(fn: (c: ConnectedClient) => Promise<T>): Promise<T> {
  let connected: ConnectedClient | undefined;
  try {
    connected = await connectClient();
    return await fn(connected);
  } catch (err) {
    if (err instanceof JukeboxError && !(err instanceof ExitError))
      throw new ExitError(ExitCode.failed, err.message, err);
    throw err;
  } finally {
    await connected?.close();
  }
}

function seconds(flag: string | boolean | undefined, usage: string): number {
  if (flag === undefined) return 10_000;
  const n = Number(flag);
  if (typeof flag !== 'string' || !Number.isFinite(n) || n < 0)
    throw usageError(`--wait needs a number of seconds, got ${JSON.stringify(flag)}\nusage: ${usage}`);
  return n * 1000;
}

export const DECISION_OPTIONS = {
  json: { type: 'boolean' },
  by: { type: 'string' },
  approval: { type: 'string' },
  'run-id': { type: 'string' },
  wait: { type: 'string' },
} as const;

export async function decideFromCli(
  verdict: 'approve' | 'reject',
  { positionals, flags, out }: CommandArgs,
  usage: string,
  extra: Pick<DecideOptions, 'note' | 'args'>,
): Promise<void> {
  if (positionals.length !== 1) throw usageError(`give one run (its workflow id)\nusage: ${usage}`);
  const workflowId = positionals[0]!;
  const by = deciderOf(flags.by);
  const options: DecideOptions = {
    by,
    acceptWithinMs: seconds(flags.wait, usage),
    ...(typeof flags.approval === 'string' ? { approvalId: flags.approval } : {}),
    ...(typeof flags['run-id'] === 'string' ? { runId: flags['run-id'] } : {}),
    ...extra,
  };
  await withTemporal(async ({ client }) => {
    const handle = client.workflow.getHandle(workflowId);
    const slow = setTimeout(
      () =>
        out.info(`waiting up to ${options.acceptWithinMs! / 1000} s for a worker to take the decision...`),
      1_000,
    );
    let result: DecisionResult;
    try {
      result =
        verdict === 'approve'
          ? await approve(handle, options)
          : await reject(handle, { ...options, reason: extra.note ?? '' });
    } finally {
      clearTimeout(slow);
    }
    const done = verdict === 'approve' ? 'approved' : 'rejected';
    const a = result.approval;
    const how = result.duplicate
      ? 'the run had already taken this very decision; nothing more was done'
      : result.via === 'update'
        ? 'the run took it'
        : `no worker took it within ${options.acceptWithinMs! / 1000} s, so it was sent as a signal: it is in the run's history and the run takes it when a worker picks it up (if it is still waiting then)`;
    out.result(
      `${done} approval ${a.id} of ${result.workflowId} (run ${result.runId}) as ${by}: ${how}\n  ${a.reason}`,
      { verdict, by, ...result },
    );
  });
}
