import { crossRealmError, JukeboxError } from '../../src/errors';

/** Building the Temporal server or finding its schema files failed; the message says which step. */
export class TemporalServerInstallError extends JukeboxError {
  constructor(problem: string, cause?: unknown) {
    super('TEMPORAL_SERVER_INSTALL', `${problem}; run \`npm run temporal:postgres install\` to retry`, {
      cause,
      nonRetryable: true,
    });
  }
}
crossRealmError('TemporalServerInstallError', TemporalServerInstallError);

/** PostgreSQL could not be set up or started for the Temporal server. */
export class PostgresClusterError extends JukeboxError {
  constructor(problem: string, logFile?: string) {
    super(
      'POSTGRES_CLUSTER',
      `${problem}${logFile ? ` (log: ${logFile})` : ''}; scripts/system-deps.sh installs PostgreSQL (apt-get install postgresql)`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('PostgresClusterError', PostgresClusterError);

/** The schema tool failed to create or upgrade Temporal's databases. */
export class TemporalSchemaError extends JukeboxError {
  constructor(step: string, output: string) {
    super(
      'TEMPORAL_SCHEMA',
      `temporal-sql-tool ${step} failed: ${output.trim().split('\n').slice(-5).join(' | ')}; ` +
        'stop the server (npm run temporal:postgres stop) and delete .jukebox/state/postgres-* to start over',
      { nonRetryable: true },
    );
  }
}
crossRealmError('TemporalSchemaError', TemporalSchemaError);
