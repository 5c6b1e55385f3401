/** `jbx reject RUN --reason TEXT`: a person rejects what the run waits for; its staging is rolled back. */

import { DECISION_OPTIONS, decideFromCli } from '../approvals/decision';
import type { CommandSpec } from '../command';
import { usageError } from '../exitError';

const USAGE =
  'jbx reject RUN --reason TEXT [--by NAME] [--approval ID] [--run-id ID] [--wait SECONDS] [--json]';

export const rejectCommand: CommandSpec = {
  name: 'reject',
  usage: USAGE,
  options: { ...DECISION_OPTIONS, reason: { type: 'string' } },
  run(args) {
    const reason = args.flags.reason;
    if (typeof reason !== 'string' || !reason.trim())
      throw usageError(`a rejection needs --reason TEXT (it is recorded and shown)\nusage: ${USAGE}`);
    return decideFromCli('reject', args, USAGE, { note: reason });
  },
};
