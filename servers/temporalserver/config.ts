/** Where the PostgreSQL-backed Temporal server listens: every test, script and worker reads the same variables. */
import { splitAddress } from '../devserver/config';
import { TemporalConfigInvalidError } from '../devserver/errors';

export interface PostgresTemporalConfig {
  /** `host:port` of the frontend (`JUKEBOX_PG_TEMPORAL_ADDRESS`, default 127.0.0.1:7633). */
  address: string;
  host: string;
  /** Frontend gRPC; history, matching and worker take the next three ports, membership port + 100.., HTTP + 10. */
  port: number;
  /** PostgreSQL's port (`JUKEBOX_PG_PORT`, default 7632). */
  postgresPort: number;
  namespace: string;
}

export const DEFAULT_PG_TEMPORAL_ADDRESS = '127.0.0.1:7633';
export const DEFAULT_PG_PORT = 7632;

export function postgresTemporalConfigFromEnv(env: NodeJS.ProcessEnv = process.env): PostgresTemporalConfig {
  const address = env.JUKEBOX_PG_TEMPORAL_ADDRESS?.trim() || DEFAULT_PG_TEMPORAL_ADDRESS;
  const { host, port } = splitAddress(address, 'JUKEBOX_PG_TEMPORAL_ADDRESS');
  if (port + 110 > 65535)
    throw new TemporalConfigInvalidError(
      'JUKEBOX_PG_TEMPORAL_ADDRESS',
      `port ${port} leaves no room for the other services (port..port+110)`,
    );
  const pgText = env.JUKEBOX_PG_PORT?.trim() || String(DEFAULT_PG_PORT);
  const postgresPort = Number(pgText);
  if (!Number.isInteger(postgresPort) || postgresPort < 1 || postgresPort > 65535)
    throw new TemporalConfigInvalidError('JUKEBOX_PG_PORT', `is "${pgText}"; use a number from 1 to 65535`);
  return {
    address,
    host,
    port,
    postgresPort,
    namespace: env.JUKEBOX_TEMPORAL_NAMESPACE?.trim() || 'jukebox',
  };
}

/** The four services' ports for a frontend port. */
export function servicePorts(port: number) {
  return {
    frontend: { grpc: port, membership: port + 100, http: port + 10 },
    history: { grpc: port + 1, membership: port + 101 },
    matching: { grpc: port + 2, membership: port + 102 },
    worker: { grpc: port + 3, membership: port + 103 },
  };
}
