/**
 * Global setup shared by both test projects: when the S3 test server (versitygw, servers/objectserver/) is installed,
 * start it once for the run and stop it at the end, so no server outlives the suite. When it is not installed
 * nothing is built here; the files that need it start it through test/support/objectServer.ts.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { jukeboxPaths } from '../servers/devserver/config';
import { startObjectServer, VERSITYGW_VERSION } from '../servers/objectserver';

export default async function setup(): Promise<() => Promise<void>> {
  const binary = path.join(jukeboxPaths().binDir, `versitygw-${VERSITYGW_VERSION}`, 'versitygw');
  if (!existsSync(binary)) return async () => {};
  const server = await startObjectServer({
    log: (m) => process.stderr.write(`[objectServerGlobalSetup] ${m}\n`),
  });
  return async () => {
    if (!server.reused) await server.stop();
  };
}
