/**
 * A Temporal server on PostgreSQL, the way a cluster runs in production (no SQLite, no dev server): the
 * pinned `temporal-server` built from Go, its databases set up by `temporal-sql-tool` on the Debian
 * PostgreSQL. Started detached (pidfile and log under `.jukebox/state/`) so that scripts and test runs find
 * and reuse it; one that already answers is reused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { DevServerPortTakenError, TemporalServerTimeoutError } from '../devserver/errors';
import { isAlive, withFileLock } from '../devserver/fileLock';
import { isPortFree } from '../devserver/ports';
import { probeServer, registerNamespace } from '../devserver/probe';
import { terminatePid } from '../devserver/processControl';
import { type DevServerHandle, spawnDetached } from '../devserver/spawnServer';
import { isZombie } from '../devserver/stateFiles';
import { stderrLog } from '../devserver/temporalCli';
import { postgresTemporalConfigFromEnv, servicePorts } from './config';
import { ensureTemporalServer } from './install';
import { ensurePostgres, stopPostgres } from './postgres';
import { setupTemporalSchema } from './schema';
import { dynamicConfig, serverConfig } from './serverConfig';

export interface PostgresTemporalHandle extends DevServerHandle {
  postgresPort: number;
}

export interface StartPostgresTemporalOptions {
  projectRoot?: string;
  env?: NodeJS.ProcessEnv;
  log?: (message: string) => void;
  /** How long to wait for the frontend and the namespace (default 120 s). */
  timeoutMs?: number;
}

// Every server has this namespace from its first start: "the frontend answers" without needing ours yet.
const SYSTEM_NAMESPACE = 'temporal-system';

export function postgresTemporalFiles(projectRoot: string | undefined, port: number) {
  const { stateDir } = jukeboxPaths(projectRoot ?? defaultProjectRoot());
  const root = path.join(stateDir, `temporal-pg-${port}`);
  return {
    stateDir,
    root,
    configFile: path.join(root, 'config', 'development.yaml'),
    dynamicConfigFile: path.join(root, 'config', 'dynamicconfig.yaml'),
    logFile: path.join(stateDir, `temporal-pg-${port}.log`),
    pidFile: path.join(stateDir, `temporal-pg-${port}.pid`),
  };
}

export async function startPostgresTemporal(
  options: StartPostgresTemporalOptions = {},
): Promise<PostgresTemporalHandle> {
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const config = postgresTemporalConfigFromEnv(env);
  const files = postgresTemporalFiles(options.projectRoot, config.port);
  const reused = (): PostgresTemporalHandle => ({
    address: config.address,
    namespace: config.namespace,
    uiUrl: undefined,
    reused: true,
    detached: true,
    pid: undefined,
    process: undefined,
    dbFile: undefined,
    logFile: files.logFile,
    postgresPort: config.postgresPort,
    stop: async () => {},
    kill: async () => {},
    logTail: () => [],
  });
  if ((await probeServer(config.address, config.namespace)) === 'up') return reused();
  fs.mkdirSync(files.stateDir, { recursive: true });
  return withFileLock(`${files.pidFile}.lock`, log, async () => {
    const state = await probeServer(config.address, config.namespace);
    if (state === 'up') return reused();
    if (state === 'no-namespace') {
      // Our server without the namespace (say it was registered on another): add it.
      await ensureNamespace(config.address, config.namespace, timeoutMs);
      return reused();
    }
    const ports = servicePorts(config.port);
    // Every port the services listen on, membership ones included: a taken one otherwise surfaces only as the
    // server's fatal log line after the schema setup.
    for (const p of Object.values(ports).flatMap((s) => Object.values(s)))
      if (!(await isPortFree(config.host, p)))
        throw new DevServerPortTakenError(
          config.host,
          p,
          'JUKEBOX_PG_TEMPORAL_ADDRESS (it uses port..port+3, +10, +100..+103)',
        );
    const bins = await ensureTemporalServer({ projectRoot: options.projectRoot, log, env });
    const pg = ensurePostgres({ stateDir: files.stateDir, port: config.postgresPort, log });
    await setupTemporalSchema(bins, pg, log);
    fs.mkdirSync(path.dirname(files.configFile), { recursive: true });
    fs.writeFileSync(
      files.configFile,
      `${JSON.stringify(serverConfig({ host: config.host, port: config.port, postgresPort: pg.port, dynamicConfigFile: files.dynamicConfigFile }), null, 2)}\n`,
    );
    fs.writeFileSync(files.dynamicConfigFile, `${JSON.stringify(dynamicConfig(), null, 2)}\n`);
    log(
      `starting Temporal ${path.basename(path.dirname(bins.server))} on PostgreSQL 127.0.0.1:${pg.port}, frontend ${config.address}`,
    );
    const handle = await spawnDetached({
      address: config.address,
      namespace: SYSTEM_NAMESPACE,
      uiUrl: undefined,
      dbFile: pg.dataDir,
      timeoutMs,
      cliPath: bins.server,
      args: ['--root', files.root, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
      env,
      logFile: files.logFile,
      pidFile: files.pidFile,
    });
    await ensureNamespace(config.address, config.namespace, timeoutMs);
    const stopServer = handle.stop;
    return {
      ...handle,
      namespace: config.namespace,
      postgresPort: pg.port,
      async stop() {
        await stopServer();
        if (pg.started) pg.stop();
      },
    };
  });
}

/** Registers the namespace and waits until the frontend serves it (its namespace cache refreshes every second here). */
async function ensureNamespace(address: string, namespace: string, timeoutMs: number): Promise<void> {
  await registerNamespace(address, namespace);
  const deadline = Date.now() + timeoutMs;
  const connection = await Connection.connect({ address });
  try {
    for (;;) {
      try {
        await connection.workflowService.countWorkflowExecutions({ namespace });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new TemporalServerTimeoutError(address, timeoutMs);
        if ((err as { code?: number }).code !== 5 /* NOT_FOUND */) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await connection.close();
  }
}

/** Stops the server of JUKEBOX_PG_TEMPORAL_ADDRESS that its pidfile names, and its PostgreSQL. */
export async function stopPostgresTemporal(
  options: { projectRoot?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ server: boolean; postgres: boolean }> {
  const config = postgresTemporalConfigFromEnv(options.env ?? process.env);
  const files = postgresTemporalFiles(options.projectRoot, config.port);
  let server = false;
  const pid = Number(fs.readFileSync(files.pidFile, 'utf8').trim() || 0) || 0;
  if (pid > 0 && isAlive(pid) && !isZombie(pid) && isTemporalServer(pid)) {
    await terminatePid(pid);
    server = true;
  }
  fs.rmSync(files.pidFile, { force: true });
  return { server, postgres: stopPostgres(files.stateDir, config.postgresPort) };
}

// Pids get reused: only stop a process whose command line is this server's.
function isTemporalServer(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--allow-no-auth');
  } catch {
    return true;
  }
}
