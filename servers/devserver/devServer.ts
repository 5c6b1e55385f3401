import fs, { constants } from 'node:fs';
import path from 'node:path';
import { splitAddress, temporalConfigFromEnv } from './config';
import { DevServerPortTakenError, DevServerStartError, TemporalCliNotFoundError } from './errors';
import { withFileLock } from './fileLock';
import { isPortFree } from './ports';
import { probeServer, registerNamespace, waitForServer } from './probe';
import { terminatePid } from './processControl';
import { type DevServerTuning, devServerTuningArgs } from './serverTuning';
import { type DevServerHandle, spawnAttached, spawnDetached } from './spawnServer';
import { fileSize, readLivePid, serverStateFiles, tailFile } from './stateFiles';
import { ensureTemporalCli, stderrLog } from './temporalCli';

export type { DevServerHandle };

export interface StartDevServerOptions extends DevServerTuning {
  /** The `temporal` binary; default: ensureTemporalCli() (installs the pinned CLI if needed). */
  cliPath?: string;
  projectRoot?: string;
  /** `host:port` of the frontend; default JUKEBOX_TEMPORAL_ADDRESS or 127.0.0.1:7233. */
  address?: string;
  /** Overrides the port of `address`. */
  port?: number;
  /** Default JUKEBOX_TEMPORAL_UI_PORT (8233) on the configured port, else port + 1000 like the CLI itself. */
  uiPort?: number;
  /** Default JUKEBOX_TEMPORAL_NAMESPACE or `jukebox`; created at start. */
  namespace?: string;
  /** Default `<root>/.jukebox/state/temporal.sqlite` (`temporal-<port>.sqlite` on other ports). */
  dbFile?: string;
  headless?: boolean;
  /**
   * Detached: the server outlives this process, logs to `.jukebox/state/temporal*.log` and is found again by
   * its pidfile (scripts). Attached (default): it is this process's child and dies with it (tests).
   */
  detached?: boolean;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** How long to wait for the frontend to answer; default 60 s. */
  timeoutMs?: number;
  log?: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Makes a Temporal dev server answer on the address: reuses one that already does, otherwise starts
 * `temporal server start-dev` and waits until the namespace can be described.
 */
export async function startDevServer(options: StartDevServerOptions = {}): Promise<DevServerHandle> {
  const env = options.env ?? process.env;
  const config = temporalConfigFromEnv(env);
  const base = splitAddress(
    options.address ?? config.address,
    options.address ? 'address' : 'JUKEBOX_TEMPORAL_ADDRESS',
  );
  const host = base.host;
  const port = options.port ?? base.port;
  const address = formatAddress(host, port);
  const namespace = options.namespace ?? config.namespace;
  const headless = options.headless ?? false;
  const uiPort = options.uiPort ?? (port === config.port ? config.uiPort : port + 1000);
  const files = serverStateFiles(options.projectRoot, port);
  const log = options.log ?? stderrLog;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const uiUrl = headless ? undefined : `http://${browsable(host)}:${uiPort}`;

  const reused = await reuseRunning(address, namespace, files.pidFile, files.logFile, timeoutMs);
  if (reused) return reusedHandle(address, namespace, uiUrl);

  const cliPath =
    options.cliPath ?? (await ensureTemporalCli({ projectRoot: options.projectRoot, log, env }));
  assertExecutable(cliPath, options.cliPath ? 'the cliPath option' : 'ensureTemporalCli');
  fs.mkdirSync(files.stateDir, { recursive: true });
  // Serialises two starts on one port (say a test run and `npm run temporal:start`): the second reuses.
  return withFileLock(`${files.pidFile}.lock`, log, async () => {
    const again = await reuseRunning(address, namespace, files.pidFile, files.logFile, timeoutMs);
    if (again) return reusedHandle(address, namespace, uiUrl);
    if (!(await isPortFree(host, port))) {
      throw new DevServerPortTakenError(host, port, 'JUKEBOX_TEMPORAL_ADDRESS (or the port option)');
    }
    if (!headless && !(await isPortFree(host, uiPort))) {
      throw new DevServerPortTakenError(
        host,
        uiPort,
        'JUKEBOX_TEMPORAL_UI_PORT (or the uiPort / headless option)',
      );
    }
    const dbFile = path.resolve(options.dbFile ?? files.dbFile);
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    const args = ['server', 'start-dev', '--ip', host, '--port', String(port), '--db-filename', dbFile];
    args.push('--namespace', namespace, '--log-level', options.logLevel ?? 'warn');
    args.push(...(headless ? ['--headless'] : ['--ui-port', String(uiPort)]));
    args.push(...devServerTuningArgs(options));
    const spawnOpts = { address, namespace, uiUrl, dbFile, timeoutMs, cliPath, args, env };
    return options.detached
      ? spawnDetached({ ...spawnOpts, logFile: files.logFile, pidFile: files.pidFile })
      : spawnAttached(spawnOpts);
  });
}

export interface StopDevServerOptions {
  projectRoot?: string;
  /** Default JUKEBOX_TEMPORAL_ADDRESS; only its port matters (it names the pidfile). */
  address?: string;
  port?: number;
  env?: NodeJS.ProcessEnv;
}

export interface StopResult {
  stopped: boolean;
  pid?: number;
  message: string;
}

/** Stops the detached dev server started for this port (found by its pidfile). Never touches other servers. */
export async function stopDevServer(options: StopDevServerOptions = {}): Promise<StopResult> {
  const config = temporalConfigFromEnv(options.env ?? process.env);
  const base = splitAddress(options.address ?? config.address);
  const port = options.port ?? base.port;
  const address = formatAddress(base.host, port);
  const { pidFile } = serverStateFiles(options.projectRoot, port);
  const pid = readLivePid(pidFile);
  if (pid !== undefined) {
    await terminatePid(pid);
    fs.rmSync(pidFile, { force: true });
    return { stopped: true, pid, message: `stopped the Temporal dev server on ${address} (pid ${pid})` };
  }
  fs.rmSync(pidFile, { force: true });
  const state = await probeServer(address);
  return {
    stopped: false,
    message:
      state === 'down'
        ? `no Temporal dev server runs on ${address}`
        : `a Temporal server answers on ${address} but Jukebox did not start it (no live pid in ${pidFile}); ` +
          'stop it where it was started',
  };
}

/** True when a server answers (ours per the pidfile, or anyone's), waiting for ours if it is still starting. */
async function reuseRunning(
  address: string,
  namespace: string,
  pidFile: string,
  logFile: string,
  timeoutMs: number,
) {
  const state = await probeServer(address, namespace);
  const own = readLivePid(pidFile) !== undefined;
  if (state === 'up') return true;
  if (state === 'no-namespace') {
    await registerNamespace(address, namespace);
    // New namespaces become visible once the frontend's namespace cache refreshes (up to ~10 s).
    await waitForServer(address, 30_000, { namespace });
    return true;
  }
  if (!own) return false;
  // Our detached server is alive but not answering yet: it is still starting, so wait for it.
  const from = Math.max(0, fileSize(logFile) - 8 * 1024);
  await waitForServer(address, timeoutMs, {
    namespace,
    onTimeout: (ms) =>
      new DevServerStartError(
        address,
        `(pid in ${pidFile}) did not answer within ${ms / 1000}s`,
        tailFile(logFile, from),
        logFile,
      ),
  });
  return true;
}

function reusedHandle(address: string, namespace: string, uiUrl: string | undefined): DevServerHandle {
  return {
    address,
    namespace,
    uiUrl,
    reused: true,
    detached: false,
    pid: undefined,
    process: undefined,
    dbFile: undefined,
    logFile: undefined,
    async stop() {},
    async kill() {},
    logTail: () => [],
  };
}

function assertExecutable(file: string, source: string): void {
  try {
    fs.accessSync(file, constants.X_OK);
  } catch (err) {
    throw new TemporalCliNotFoundError(file, source, err);
  }
}

function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function browsable(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}
