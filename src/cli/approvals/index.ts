/** `jbx approvals`: every run of the namespace that waits for a person, with what it asks and what is staged. */
import { oneLine } from '../../errors/printable';
import { listApprovals, type PendingApproval } from '../../temporal/client/approvals';
import type { CommandSpec } from '../command';
import { withTemporal } from './decision';

const USAGE = 'jbx approvals [--workflow NAME] [--json]';

function ago(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 90) return `${s}s`;
  if (s < 90 * 60) return `${Math.round(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

function subjectLine(p: PendingApproval): string {
  const s = p.subject as { gates?: { gate: string }[]; tool?: string; server?: string; args?: unknown };
  if (s.gates) return `commit, asked by gate ${s.gates.map((g) => g.gate).join(', ')}`;
  const call = p.kind === 'mcp' ? `${s.server}/${s.tool}` : s.tool;
  return `${p.kind} call ${call}(${JSON.stringify(s.args)})`;
}

/**
 * One pending approval as lines a person reads. Reasons, tool arguments and staged lines hold what an agent
 * chose (names, statements): every control or bidi character is escaped, so none adds or reorders a line.
 */
export function renderPending(p: PendingApproval, now = Date.now()): string[] {
  const lines = [
    `${p.workflowId}  run ${p.runId}  ${p.workflowType}`,
    `  approval ${p.id} at step ${p.step}: ${subjectLine(p)}`,
    `  reason: ${p.reason}`,
    `  asked ${ago(now - p.requestedAtMs)} ago; ${p.deadlineMs > now ? `deadline in ${ago(p.deadlineMs - now)}` : 'deadline passed'} (then ${p.onTimeout}); ${p.deciders ? `deciders: ${p.deciders.join(', ')}` : 'anyone may decide'}`,
  ];
  const staged = p.staged;
  if (staged) {
    for (const f of staged.files) lines.push(`  file  ${f}`);
    for (const s of staged.sql) lines.push(`  sql   ${s}`);
    for (const m of staged.mcp) lines.push(`  mcp   ${m}`);
    if (staged.more) lines.push(`  ... and ${staged.more} more (jbx show the run's tape for all of it)`);
    if (!staged.files.length && !staged.sql.length && !staged.mcp.length) lines.push('  nothing staged');
  }
  lines.push(
    `  decide: jbx approve ${p.workflowId} [--note TEXT]   or   jbx reject ${p.workflowId} --reason TEXT`,
  );
  return lines.map(oneLine);
}

export const approvalsCommand: CommandSpec = {
  name: 'approvals',
  usage: USAGE,
  options: { json: { type: 'boolean' }, workflow: { type: 'string' } },
  async run({ flags, out }) {
    const workflowType = flags.workflow as string | undefined;
    await withTemporal(async ({ client, config }) => {
      const pending = await listApprovals(client, workflowType ? { workflowType } : {});
      const where = `namespace ${config.namespace} at ${config.address}`;
      const human = pending.length
        ? [
            `${pending.length} run${pending.length === 1 ? '' : 's'} wait${pending.length === 1 ? 's' : ''} for a person (${where})`,
            ...pending.flatMap((p) => ['', ...renderPending(p)]),
          ].join('\n')
        : `no run waits for a person (${where})`;
      out.result(human, { namespace: config.namespace, address: config.address, pending });
    });
  },
};
