/**
 * Runs the pinned Jaeger with in-memory storage on ports of the caller's choosing (free ones by default, so
 * tests and a developer's own Jaeger coexist): OTLP/HTTP in, the query API out.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { jukeboxPaths } from '../devserver/config';
import { freePort } from '../devserver/ports';
import { terminateChild, terminatePid } from '../devserver/processControl';
import { JaegerStartError } from './errors';
import { ensureJaeger } from './jaegerBinary';

export interface StartJaegerOptions {
  host?: string;
  /** OTLP/HTTP receiver; default a free port (the conventional one is 4318). */
  otlpHttpPort?: number;
  /** Query API and UI; default a free port (the conventional one is 16686). */
  queryPort?: number;
  /** Outlives this process, with a pidfile for `scripts/jaeger.ts stop`. */
  detached?: boolean;
  stateDir?: string;
  startTimeoutMs?: number;
  log?: (message: string) => void;
}

export interface JaegerServer {
  /** OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 */
  otlpUrl: string;
  /** Query API base URL, e.g. http://127.0.0.1:16686 */
  queryUrl: string;
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

function configYaml(host: string, p: { otlp: number; query: number; queryGrpc: number; health: number }) {
  return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: ${host}:${p.health}
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: ${host}:${p.query}
    grpc:
      endpoint: ${host}:${p.queryGrpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: ${host}:${p.otlp}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

export function jaegerPidFile(stateDir = jukeboxPaths().stateDir) {
  return path.join(stateDir, 'jaeger.pid');
}

const tcpOpen = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

const logTail = (file: string) => {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-15);
  } catch {
    return [];
  }
};

export async function startJaeger(options: StartJaegerOptions = {}): Promise<JaegerServer> {
  const host = options.host ?? '127.0.0.1';
  const binary = await ensureJaeger({ log: options.log });
  const ports = {
    otlp: options.otlpHttpPort ?? (await freePort(host)),
    query: options.queryPort ?? (await freePort(host)),
    queryGrpc: await freePort(host),
    health: await freePort(host),
  };
  // An attached Jaeger (tests) keeps its config and log in a temporary folder it removes on stop.
  const scratch = !options.detached && !options.stateDir;
  const stateDir =
    options.stateDir ??
    (scratch ? await fs.mkdtemp(path.join(os.tmpdir(), 'jukebox-jaeger-')) : jukeboxPaths().stateDir);
  await fs.mkdir(stateDir, { recursive: true });
  const configFile = path.join(stateDir, `jaeger-${ports.otlp}.yaml`);
  const logFile = path.join(stateDir, `jaeger-${ports.otlp}.log`);
  await fs.writeFile(configFile, configYaml(host, ports));
  const fd = openSync(logFile, 'w');
  let child: ChildProcess;
  try {
    child = spawn(binary, ['--config', configFile], {
      stdio: ['ignore', fd, fd],
      detached: options.detached ?? false,
    });
  } finally {
    closeSync(fd);
  }
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
  });
  const otlpUrl = `http://${host}:${ports.otlp}`;
  const queryUrl = `http://${host}:${ports.query}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined)
      throw new JaegerStartError(`it exited with code ${exited}`, logTail(logFile), logFile);
    if ((await answers(`${queryUrl}/api/services`)) && (await tcpOpen(host, ports.otlp))) break;
    if (Date.now() > deadline) {
      await terminateChild(child);
      throw new JaegerStartError(
        `no answer on ${queryUrl} within the start timeout`,
        logTail(logFile),
        logFile,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const pid = child.pid as number;
  if (options.detached) {
    child.unref();
    await fs.writeFile(jaegerPidFile(stateDir), `${pid}\n${otlpUrl}\n${queryUrl}\n`);
  }
  return {
    otlpUrl,
    queryUrl,
    pid,
    logFile,
    async stop() {
      if (options.detached) await terminatePid(pid);
      else await terminateChild(child);
      if (scratch) await fs.rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** Stops the Jaeger `scripts/jaeger.ts start` left running; false when there was none. */
export async function stopDetachedJaeger(stateDir = jukeboxPaths().stateDir): Promise<boolean> {
  const file = jaegerPidFile(stateDir);
  let pid: number;
  try {
    pid = Number((await fs.readFile(file, 'utf8')).split('\n')[0]);
  } catch {
    return false;
  }
  if (Number.isInteger(pid) && pid > 0) await terminatePid(pid);
  await fs.rm(file, { force: true });
  return true;
}
