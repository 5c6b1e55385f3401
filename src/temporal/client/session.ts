/**
 * A connection and client to the configured Temporal server (JUKEBOX_TEMPORAL_ADDRESS / _NAMESPACE) for one
 * piece of work, closed after it: how `jbx` reaches Temporal without importing the SDK itself.
 */
import { type Client, Connection } from '@temporalio/client';
import { type TemporalConfig, temporalConfigFromEnv } from '../config';
import { jukeboxClient } from './jukeboxClient';
import { fetchRunHistories } from './runChain';
import { storeHistory } from './storedHistory';

export interface TemporalSession {
  connection: Connection;
  client: Client;
  config: TemporalConfig;
}

const CONNECT_TIMEOUT_MS = 5_000;

export async function withTemporal<T>(
  work: (session: TemporalSession) => Promise<T>,
  config: TemporalConfig = temporalConfigFromEnv(),
): Promise<T> {
  const connection = await Connection.connect({
    address: config.address,
    connectTimeout: CONNECT_TIMEOUT_MS,
  });
  try {
    return await work({
      connection,
      // Reads payloads the workers keep in the content store (a run's result, memos, query answers).
      client: jukeboxClient(connection, config.namespace),
      config,
    });
  } finally {
    await connection.close();
  }
}

/**
 * Fetches a run's history from the server (every execution's, for a run that continued as new) and stores it
 * beside its tape (storedHistory.ts).
 */
export async function fetchHistoryBesideTape(
  tapeFile: string,
  run: { workflowId: string; runId: string },
  config?: TemporalConfig,
): Promise<void> {
  await withTemporal(async ({ client }) => {
    await storeHistory(tapeFile, await fetchRunHistories(client.workflow, run.workflowId, run.runId), run);
  }, config);
}
