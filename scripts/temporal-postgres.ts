/**
 * The Temporal server on PostgreSQL (servers/temporalserver/): `tsx scripts/temporal-postgres.ts install|start|stop|status`.
 * Listens on JUKEBOX_PG_TEMPORAL_ADDRESS (default 127.0.0.1:7633), PostgreSQL on JUKEBOX_PG_PORT (7632).
 */
import { isServerUp } from '../servers/devserver';
import {
  ensureTemporalServer,
  postgresTemporalConfigFromEnv,
  postgresTemporalFiles,
  startPostgresTemporal,
  stopPostgresTemporal,
  TEMPORAL_SERVER_VERSION,
} from '../servers/temporalserver';
import { runScript } from './runScript';

const USAGE = 'usage: tsx scripts/temporal-postgres.ts install|start|stop|status';

async function main(action: string | undefined): Promise<number> {
  const config = postgresTemporalConfigFromEnv();
  switch (action) {
    case 'install': {
      const started = Date.now();
      const bins = await ensureTemporalServer();
      console.log(`Temporal server ${TEMPORAL_SERVER_VERSION}: ${bins.server}`);
      console.log(`schema tool: ${bins.sqlTool} (schema ${bins.postgresSchemaDir})`);
      console.log(`ready in ${Math.round((Date.now() - started) / 1000)} s`);
      return 0;
    }
    case 'start': {
      const server = await startPostgresTemporal();
      console.log(
        server.reused
          ? `Temporal already answers on ${server.address}`
          : `Temporal server on PostgreSQL started (pid ${server.pid})`,
      );
      console.log(`address:    ${server.address}`);
      console.log(`namespace:  ${server.namespace}`);
      console.log(`postgresql: 127.0.0.1:${server.postgresPort}`);
      console.log(`log:        ${server.logFile}`);
      console.log(
        `use it with: JUKEBOX_TEMPORAL_ADDRESS=${server.address}; stop it with: npm run temporal:postgres stop`,
      );
      return 0;
    }
    case 'stop': {
      const r = await stopPostgresTemporal();
      console.log(
        `${r.server ? 'stopped the Temporal server' : 'no Temporal server of ours was running'}; ` +
          `${r.postgres ? 'stopped PostgreSQL' : 'PostgreSQL was not running'}`,
      );
      return 0;
    }
    case 'status': {
      const up = await isServerUp(config.address, config.namespace);
      console.log(
        up
          ? `up on ${config.address}, namespace ${config.namespace}; log ${postgresTemporalFiles(undefined, config.port).logFile}`
          : `no Temporal server answers on ${config.address} with namespace ${config.namespace}`,
      );
      return up ? 0 : 1;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

runScript('temporal-postgres', main);
