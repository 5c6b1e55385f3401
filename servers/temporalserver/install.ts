/**
 * The Temporal server and its SQL schema tool, built from the Go module proxy at the version the pinned
 * Temporal CLI embeds (so the dev server and the PostgreSQL-backed server run the same server code), into
 * `.jukebox/bin/temporal-server-<version>/`. A build is reused while that folder holds both binaries.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { runCommand } from '../devserver/exec';
import { withFileLock } from '../devserver/fileLock';
import { goInstall } from '../devserver/goInstall';
import { stderrLog } from '../devserver/temporalCli';
import { TemporalServerInstallError } from './errors';

/** Temporal Server release of the pinned CLI v1.5.1's dev server. */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

export interface TemporalServerBinaries {
  /** `temporal-server` (`cmd/server`). */
  server: string;
  /** `temporal-sql-tool` (`cmd/tools/sql`). */
  sqlTool: string;
  /** The release's `schema/postgresql/v12` folder, read by the schema tool. */
  postgresSchemaDir: string;
}

export interface EnsureTemporalServerOptions {
  projectRoot?: string;
  log?: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}

export async function ensureTemporalServer(
  options: EnsureTemporalServerOptions = {},
): Promise<TemporalServerBinaries> {
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const { binDir } = jukeboxPaths(options.projectRoot ?? defaultProjectRoot());
  const dir = path.join(binDir, `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const server = path.join(dir, 'server');
  const sqlTool = path.join(dir, 'sql');
  await fs.mkdir(dir, { recursive: true });
  await withFileLock(path.join(dir, '.install.lock'), log, async () => {
    for (const [pkg, binary, what] of [
      ['cmd/server', server, 'the Temporal server'],
      ['cmd/tools/sql', sqlTool, 'the Temporal SQL schema tool'],
    ] as const) {
      if (await isExecutable(binary)) continue;
      await goInstall({
        pkg: `${TEMPORAL_SERVER_MODULE}/${pkg}`,
        version: TEMPORAL_SERVER_VERSION,
        binDir: dir,
        log,
        env,
        what: `${what} ${TEMPORAL_SERVER_VERSION}`,
      });
      if (!(await isExecutable(binary)))
        throw new TemporalServerInstallError(`go install finished but ${binary} is not there`);
    }
  });
  return { server, sqlTool, postgresSchemaDir: await postgresSchemaDir(env) };
}

/** The schema files ship in the server module itself; `go mod download` finds (or fetches) its folder. */
async function postgresSchemaDir(env: NodeJS.ProcessEnv): Promise<string> {
  const target = `${TEMPORAL_SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`;
  const out = await runCommand('go', ['mod', 'download', '-json', target], { env, timeoutMs: 300_000 });
  if (out?.code !== 0)
    throw new TemporalServerInstallError(
      `go mod download ${target} failed: ${(out?.stderr || out?.stdout || 'go not found').trim()}`,
    );
  const dir = (JSON.parse(out.stdout) as { Dir?: string }).Dir;
  const schema = dir && path.join(dir, 'schema', 'postgresql', 'v12');
  if (!schema || !(await isDirectory(schema)))
    throw new TemporalServerInstallError(`the module ${target} has no schema/postgresql/v12 folder`);
  return schema;
}

async function isExecutable(file: string): Promise<boolean> {
  return fs.access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function isDirectory(dir: string): Promise<boolean> {
  return fs.stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
