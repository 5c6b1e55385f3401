/**
 * Vitest global setup: one real Temporal dev server for the whole run. Reuses a server that already answers
 * (say `npm run temporal:start`), else installs the pinned CLI and starts one detached, stopping it afterwards.
 */
import type { TestProject } from 'vitest/node';
import { startDevServer, temporalConfigFromEnv } from '../servers/devserver';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const config = temporalConfigFromEnv();
  const log = (m: string) => process.stderr.write(`[globalSetup] ${m}\n`);
  const server = await startDevServer({
    address: config.address,
    namespace: config.namespace,
    // Detached: if vitest dies, the server is still findable (and stoppable) through its pidfile.
    detached: true,
    // The CLI is only installed (ensureTemporalCli) when no server answers and one must be started.
    log,
  });
  log(
    server.reused
      ? `reusing the Temporal server on ${server.address}`
      : `started a Temporal dev server on ${server.address} (pid ${server.pid}, log ${server.logFile})`,
  );
  // Test workers are forked after this, so they inherit these; inject() is there for the explicit route.
  process.env.JUKEBOX_TEMPORAL_ADDRESS = server.address;
  process.env.JUKEBOX_TEMPORAL_NAMESPACE = server.namespace;
  project.provide('temporalAddress', server.address);
  project.provide('temporalNamespace', server.namespace);
  return async () => {
    if (server.reused) return;
    await server.stop();
    log(`stopped the Temporal dev server on ${server.address}`);
  };
}
