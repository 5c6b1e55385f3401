import {
  ensureTemporalCli,
  isServerUp,
  startDevServer,
  stopDevServer,
  temporalConfigFromEnv,
} from '../../../servers/devserver';
import type { CommandSpec } from '../command';
import { usageError } from '../exitError';

export const serverCommand: CommandSpec = {
  name: 'server',
  summary: 'install, start, stop or check the local Temporal dev server',
  usage: 'jbx server start|stop|status [--json]',
  options: { json: { type: 'boolean' } },
  async run({ positionals, out }) {
    const action = positionals[0];
    const config = temporalConfigFromEnv();
    const status = {
      address: config.address,
      namespace: config.namespace,
      ui: `http://127.0.0.1:${config.uiPort}`,
    };
    if (action === 'start') {
      await startDevServer({ cliPath: await ensureTemporalCli({ log: (m) => out.info(m) }), detached: true });
      out.result(
        `Temporal dev server up on ${status.address} (namespace ${status.namespace}); Web UI ${status.ui}`,
        {
          ...status,
          up: true,
        },
      );
    } else if (action === 'stop') {
      const stopped = await stopDevServer();
      out.result(stopped.message, { ...status, ...stopped, up: false });
    } else if (action === 'status') {
      const up = await isServerUp(config.address);
      out.result(
        up ? `up on ${status.address}; Web UI ${status.ui}` : `no server answers on ${status.address}`,
        {
          ...status,
          up,
        },
      );
    } else throw usageError(`jbx server needs start, stop or status (got ${action ?? 'nothing'})`);
  },
};
