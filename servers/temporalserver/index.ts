/**
 * A production-shaped Temporal server for tests and scripts: `temporal-server` built from the Go module proxy
 * at the pinned release, persisting to PostgreSQL (the Debian package), schema set up by `temporal-sql-tool`.
 */
export {
  DEFAULT_PG_PORT,
  DEFAULT_PG_TEMPORAL_ADDRESS,
  type PostgresTemporalConfig,
  postgresTemporalConfigFromEnv,
  servicePorts,
} from './config';
export { PostgresClusterError, TemporalSchemaError, TemporalServerInstallError } from './errors';
export {
  ensureTemporalServer,
  TEMPORAL_SERVER_MODULE,
  TEMPORAL_SERVER_VERSION,
  type TemporalServerBinaries,
} from './install';
export { ensurePostgres, type PostgresCluster, postgresBinDir, stopPostgres } from './postgres';
export { setupTemporalSchema, TEMPORAL_DATABASES } from './schema';
export {
  type PostgresTemporalHandle,
  postgresTemporalFiles,
  type StartPostgresTemporalOptions,
  startPostgresTemporal,
  stopPostgresTemporal,
} from './server';
