/**
 * Global setup of the `postgres` test project: the Temporal server on PostgreSQL (servers/temporalserver/), built and
 * started by the project's own code, reused when one already answers; stopped afterwards if started here.
 * The project's files reach it through JUKEBOX_TEMPORAL_ADDRESS, which vitest.config.ts sets for them.
 */
import { startPostgresTemporal } from '../servers/temporalserver';

export default async function setup(): Promise<() => Promise<void>> {
  const log = (m: string) => process.stderr.write(`[postgresGlobalSetup] ${m}\n`);
  const server = await startPostgresTemporal({ log });
  log(
    server.reused
      ? `reusing the Temporal server on PostgreSQL at ${server.address}`
      : `started Temporal on PostgreSQL at ${server.address} (pid ${server.pid}, log ${server.logFile})`,
  );
  return async () => {
    if (server.reused) return;
    await server.stop();
    log(`stopped the Temporal server on PostgreSQL at ${server.address}`);
  };
}
