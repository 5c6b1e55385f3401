/**
 * A Temporal client for short-lived processes (the `jbx` commands): connects to the server the environment names
 * (JUKEBOX_TEMPORAL_ADDRESS, JUKEBOX_TEMPORAL_NAMESPACE) and says clearly when it does not answer.
 */
import { Client, Connection } from '@temporalio/client';
import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';
import { type TemporalConfig, temporalConfigFromEnv } from '../config';

/** The Temporal server did not answer. */
export class TemporalUnreachableError extends JukeboxError {
  constructor(address: string, cause: unknown) {
    super(
      'TEMPORAL_UNREACHABLE',
      `the Temporal server at ${address} did not answer (${cause instanceof Error ? cause.message : String(cause)}); start it (npm run temporal:start) or point JUKEBOX_TEMPORAL_ADDRESS at the server that runs the workflows`,
      { cause },
    );
  }
}
crossRealmError('TemporalUnreachableError', TemporalUnreachableError);

export interface ConnectedClient {
  client: Client;
  config: TemporalConfig;
  close(): Promise<void>;
}

export async function connectClient(
  config: TemporalConfig = temporalConfigFromEnv(),
): Promise<ConnectedClient> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: config.address, connectTimeout: 5_000 });
  } catch (err) {
    throw new TemporalUnreachableError(config.address, err);
  }
  return {
    client: new Client({ connection, namespace: config.namespace }),
    config,
    close: () => connection.close(),
  };
}
