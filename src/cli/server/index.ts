/**
 * `jbx server status`: is the Temporal server the project is configured for answering? Jukebox runs on any
 * Temporal (the Temporal CLI's dev server, a self-hosted cluster, Temporal Cloud) and does not start one
 * itself: the package ships no build of Temporal, and which server a team runs is its own choice.
 */
import { probeServer } from '../../temporal/client/probe';
import { temporalConfigFromEnv } from '../../temporal/config';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';

const START_HINT =
  'start one with the Temporal CLI: `temporal server start-dev --namespace jukebox` (or point ' +
  'JUKEBOX_TEMPORAL_ADDRESS / JUKEBOX_TEMPORAL_NAMESPACE at yours)';

export const serverCommand: CommandSpec = {
  name: 'server',
  usage: 'jbx server status [--json]',
  options: { json: { type: 'boolean' } },
  async run({ positionals, out }) {
    const action = positionals[0];
    if (action === 'start' || action === 'stop')
      throw usageError(`jbx does not ${action} Temporal servers; ${START_HINT}`);
    if (action !== 'status') throw usageError(`jbx server needs status (got ${action ?? 'nothing'})`);
    const config = temporalConfigFromEnv();
    const state = await probeServer(config.address, config.namespace);
    const status = { address: config.address, namespace: config.namespace, state, up: state === 'up' };
    if (state === 'up') return out.result(`up on ${config.address}, namespace ${config.namespace}`, status);
    out.result(
      state === 'no-namespace'
        ? `${config.address} answers but has no namespace ${config.namespace}; ` +
            `create it: temporal operator namespace create --address ${config.address} ${config.namespace}`
        : `no Temporal server answers on ${config.address}; ${START_HINT}`,
      status,
    );
    throw new ExitError(ExitCode.failed, `Temporal is not ready on ${config.address}`);
  },
};
