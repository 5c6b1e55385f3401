/**
 * Temporal's two PostgreSQL databases (`temporal`, `temporal_visibility`) created and brought to the schema
 * version of the pinned server release with its own tool, temporal-sql-tool. Re-running is harmless.
 */
import { runCommand } from '../devserver/exec';
import { TemporalSchemaError } from './errors';
import type { TemporalServerBinaries } from './install';
import type { PostgresCluster } from './postgres';

export const TEMPORAL_DATABASES = { default: 'temporal', visibility: 'temporal_visibility' } as const;

export async function setupTemporalSchema(
  bins: TemporalServerBinaries,
  pg: Pick<PostgresCluster, 'host' | 'port' | 'user'>,
  log: (m: string) => void,
): Promise<void> {
  const base = ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', pg.user];
  const tool = async (db: string, args: string[], step: string, allowExisting = false) => {
    const out = await runCommand(bins.sqlTool, [...base, '--db', db, ...args], { timeoutMs: 300_000 });
    if (!out) throw new TemporalSchemaError(step, `${bins.sqlTool} not found`);
    const text = `${out.stdout}\n${out.stderr}`;
    if (out.code === 0) return;
    if (allowExisting && /already exists/i.test(text)) return;
    throw new TemporalSchemaError(`${step} (${db})`, text);
  };
  for (const [db, folder] of [
    [TEMPORAL_DATABASES.default, 'temporal'],
    [TEMPORAL_DATABASES.visibility, 'visibility'],
  ] as const) {
    // Each step is idempotent: create-database keeps an existing database, setup-schema -v 0.0 skips a
    // database already past 0.0, update-schema applies only the versions a database lacks.
    await tool(db, ['create-database'], 'create-database', true);
    await tool(db, ['setup-schema', '-v', '0.0'], 'setup-schema');
    await tool(db, ['update-schema', '-d', `${bins.postgresSchemaDir}/${folder}/versioned`], 'update-schema');
    log(`schema of ${db} is current`);
  }
}
