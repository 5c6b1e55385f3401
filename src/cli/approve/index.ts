/** `jbx approve RUN`: a person approves what the run waits for (a gate's ask, a tool or MCP call). */

import { DECISION_OPTIONS, decideFromCli } from '../approvals/decision';
import type { CommandSpec } from '../command';
import { usageError } from '../exitError';

const USAGE =
  'jbx approve RUN [--note TEXT] [--args JSON] [--by NAME] [--approval ID] [--run-id ID] [--wait SECONDS] [--json]';

function argsOf(flag: string | boolean | undefined): Record<string, unknown> | undefined {
  if (flag === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(flag));
  } catch (err) {
    throw usageError(`--args must be a JSON object (${(err as Error).message})\nusage: ${USAGE}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw usageError(`--args must be a JSON object, got ${String(flag)}\nusage: ${USAGE}`);
  return parsed as Record<string, unknown>;
}

export const approveCommand: CommandSpec = {
  name: 'approve',
  usage: USAGE,
  options: { ...DECISION_OPTIONS, note: { type: 'string' }, args: { type: 'string' } },
  run(args) {
    const edited = argsOf(args.flags.args);
    return decideFromCli('approve', args, USAGE, {
      ...(typeof args.flags.note === 'string' ? { note: args.flags.note } : {}),
      ...(edited ? { args: edited } : {}),
    });
  },
};
