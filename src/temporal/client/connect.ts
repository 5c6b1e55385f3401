/**
 * Connections to the Temporal server the environment names (JUKEBOX_TEMPORAL_ADDRESS, JUKEBOX_TEMPORAL_NAMESPACE)
 * that say clearly, as typed errors, when it does not answer or lacks the namespace: a client (`npm start`, the
 * `jbx` commands) and a worker's native connection.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';
import { type TemporalConfig, temporalConfigFromEnv } from '../config';

const reasonOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause));

/** The Temporal server did not answer at the address the settings name. */
export class TemporalUnreachableError extends JukeboxError {
  constructor(
    readonly address: string,
    cause: unknown,
    readonly namespace?: string,
  ) {
    super(
      'TEMPORAL_UNREACHABLE',
      `the Temporal server at ${address}${namespace ? ` (namespace ${namespace})` : ''} did not answer ` +
        `(${reasonOf(cause)}); start one (temporal server start-dev --namespace ${namespace ?? 'jukebox'}; in a ` +
        'Jukebox checkout, npm run temporal:start) or point JUKEBOX_TEMPORAL_ADDRESS at the server that runs the ' +
        'workflows',
      { cause },
    );
  }
}
crossRealmError('TemporalUnreachableError', TemporalUnreachableError);

/** The server answered, and has no namespace of the name the settings give. */
export class TemporalNamespaceNotFoundError extends JukeboxError {
  constructor(
    readonly address: string,
    readonly namespace: string,
    cause?: unknown,
  ) {
    super(
      'TEMPORAL_NAMESPACE_NOT_FOUND',
      `the Temporal server at ${address} has no namespace ${namespace}; create it (temporal operator namespace ` +
        `create --namespace ${namespace} --address ${address}, or start the dev server with --namespace ` +
        `${namespace}) or set JUKEBOX_TEMPORAL_NAMESPACE to one it has`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('TemporalNamespaceNotFoundError', TemporalNamespaceNotFoundError);

/** How long a connection waits for the server before TemporalUnreachableError. */
const CONNECT_TIMEOUT_MS = 5_000;

const isNotFound = (err: unknown) => (err as { code?: number } | null)?.code === 5; // gRPC NOT_FOUND

/** Throws TemporalNamespaceNotFoundError when the server says it lacks the namespace; other answers pass. */
async function checkNamespace(
  service: Connection['workflowService'],
  config: TemporalConfig,
  close: () => Promise<void>,
): Promise<void> {
  try {
    await service.describeNamespace({ namespace: config.namespace });
  } catch (err) {
    // Permission to describe a namespace is not everyone's; only a NOT_FOUND is a verdict.
    if (!isNotFound(err)) return;
    await close().catch(() => {});
    throw new TemporalNamespaceNotFoundError(config.address, config.namespace, err);
  }
}

/**
 * A client connection to the configured server, its namespace checked: TemporalUnreachableError when the
 * server does not answer within 5 s, TemporalNamespaceNotFoundError when it lacks the namespace.
 */
export async function connectTemporal(config: TemporalConfig = temporalConfigFromEnv()): Promise<Connection> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: config.address, connectTimeout: CONNECT_TIMEOUT_MS });
  } catch (err) {
    throw new TemporalUnreachableError(config.address, err, config.namespace);
  }
  await checkNamespace(connection.workflowService, config, () => connection.close());
  return connection;
}

/** A worker's native connection to the configured server, with connectTemporal's typed errors. */
export async function connectTemporalWorker(
  config: TemporalConfig = temporalConfigFromEnv(),
): Promise<NativeConnection> {
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ address: config.address });
  } catch (err) {
    throw new TemporalUnreachableError(config.address, err, config.namespace);
  }
  await checkNamespace(connection.workflowService as unknown as Connection['workflowService'], config, () =>
    connection.close(),
  );
  return connection;
}

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
    connection = await Connection.connect({ address: config.address, connectTimeout: CONNECT_TIMEOUT_MS });
  } catch (err) {
    throw new TemporalUnreachableError(config.address, err, config.namespace);
  }
  return {
    client: new Client({ connection, namespace: config.namespace }),
    config,
    close: () => connection.close(),
  };
}
