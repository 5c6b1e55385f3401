/** The local Temporal dev server: `tsx scripts/temporal.ts install|start|stop|status`. */
import {
  ensureTemporalCli,
  isServerUp,
  serverStateFiles,
  startDevServer,
  stopDevServer,
  temporalCliVersion,
  temporalConfigFromEnv,
} from '../servers/devserver';
import { runScript } from './runScript';

const USAGE = 'usage: tsx scripts/temporal.ts install|start|stop|status';

async function main(action: string | undefined): Promise<number> {
  const config = temporalConfigFromEnv();
  const uiUrl = `http://127.0.0.1:${config.uiPort}`;
  switch (action) {
    case 'install': {
      const cli = await ensureTemporalCli();
      console.log(`Temporal CLI ${(await temporalCliVersion(cli)) ?? '(version unknown)'}: ${cli}`);
      return 0;
    }
    case 'start': {
      const server = await startDevServer({ detached: true });
      console.log(
        server.reused
          ? `Temporal already answers on ${server.address}`
          : `Temporal dev server started (pid ${server.pid})`,
      );
      console.log(`address:   ${server.address}`);
      console.log(`namespace: ${server.namespace}`);
      console.log(`Web UI:    ${server.uiUrl ?? uiUrl}`);
      if (server.logFile) console.log(`log:       ${server.logFile}`);
      if (!server.reused) console.log('stop it with: npm run temporal:stop');
      return 0;
    }
    case 'stop': {
      console.log((await stopDevServer()).message);
      return 0;
    }
    case 'status': {
      const up = await isServerUp(config.address, config.namespace);
      const { logFile } = serverStateFiles(undefined, config.port);
      console.log(
        up
          ? `up on ${config.address}, namespace ${config.namespace}; Web UI ${uiUrl}`
          : `no Temporal server answers on ${config.address} with namespace ${config.namespace}`,
      );
      if (up) console.log(`log (when started by Jukebox): ${logFile}`);
      // Non-zero when down so shell scripts can branch on it.
      return up ? 0 : 1;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

runScript('temporal', main);
