import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { DevServerStartError } from './errors';
import { waitForServer } from './probe';
import { hasExited, killChild, killPid, terminateChild, terminatePid } from './processControl';
import { fileSize, tailFile } from './stateFiles';

/** A dev server that answers: started by this call (attached or detached) or reused. */
export interface DevServerHandle {
  address: string;
  namespace: string;
  /** Undefined when headless. For a reused server started elsewhere it is where the UI is expected. */
  uiUrl: string | undefined;
  /** True when a server already answered and none was started; stop() then leaves it alone. */
  reused: boolean;
  detached: boolean;
  pid: number | undefined;
  /** The child process when this process started the server. */
  process: ChildProcess | undefined;
  dbFile: string | undefined;
  logFile: string | undefined;
  /** SIGTERM, wait, SIGKILL if needed. A no-op for a reused server. */
  stop(): Promise<void>;
  /** Sends `signal` (default SIGKILL) and waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** The server's most recent log lines. */
  logTail(): string[];
}

const KEPT_LOG_LINES = 200;
const attachedChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

export interface SpawnOptions {
  address: string;
  namespace: string;
  uiUrl: string | undefined;
  dbFile: string;
  timeoutMs: number;
  cliPath: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/** The server as this process's child: its output is kept in memory, and it dies with this process. */
export async function spawnAttached(o: SpawnOptions): Promise<DevServerHandle> {
  const lines: string[] = [];
  const child = spawn(o.cliPath, o.args, { env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
  attachedChildren.add(child);
  // An attached server must not outlive the test process that started it, even when a test forgets stop().
  if (!exitHookInstalled) process.once('exit', killAttachedChildren);
  exitHookInstalled = true;
  child.once('exit', () => attachedChildren.delete(child));
  const keep = (d: Buffer) => {
    lines.push(
      ...d
        .toString()
        .split('\n')
        .filter((l) => l.trim()),
    );
    if (lines.length > KEPT_LOG_LINES) lines.splice(0, lines.length - KEPT_LOG_LINES);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const handle: DevServerHandle = {
    address: o.address,
    namespace: o.namespace,
    uiUrl: o.uiUrl,
    reused: false,
    detached: false,
    pid: child.pid,
    process: child,
    dbFile: o.dbFile,
    logFile: undefined,
    stop: () => terminateChild(child),
    kill: (sig = 'SIGKILL') => killChild(child, sig),
    logTail: () => lines.slice(-30),
  };
  await waitUntilReady(o, child, handle.logTail, undefined, () => handle.kill());
  return handle;
}

/** The server in its own session, logging to a file and findable through its pidfile after we exit. */
export async function spawnDetached(
  o: SpawnOptions & { logFile: string; pidFile: string },
): Promise<DevServerHandle> {
  const from = fileSize(o.logFile);
  fs.appendFileSync(o.logFile, `--- jukebox ${new Date().toISOString()}: ${o.cliPath} ${o.args.join(' ')}\n`);
  const fd = fs.openSync(o.logFile, 'a');
  let child: ChildProcess;
  try {
    // Its own process group, so Ctrl-C in the starting terminal does not take the server down with it.
    child = spawn(o.cliPath, o.args, { env: o.env, stdio: ['ignore', fd, fd], detached: true });
  } finally {
    fs.closeSync(fd);
  }
  child.unref();
  const pid = child.pid;
  if (pid !== undefined) fs.writeFileSync(o.pidFile, `${pid}\n`);
  const stop = async () => {
    if (pid !== undefined) await terminatePid(pid);
    fs.rmSync(o.pidFile, { force: true });
  };
  const handle: DevServerHandle = {
    address: o.address,
    namespace: o.namespace,
    uiUrl: o.uiUrl,
    reused: false,
    detached: true,
    pid,
    process: child,
    dbFile: o.dbFile,
    logFile: o.logFile,
    stop,
    async kill(sig = 'SIGKILL') {
      if (pid !== undefined) await killPid(pid, sig);
      fs.rmSync(o.pidFile, { force: true });
    },
    logTail: () => tailFile(o.logFile, from),
  };
  await waitUntilReady(o, child, handle.logTail, o.logFile, stop);
  return handle;
}

async function waitUntilReady(
  o: SpawnOptions,
  child: ChildProcess,
  logTail: () => string[],
  logFile: string | undefined,
  cleanUp: () => Promise<void>,
): Promise<void> {
  let spawnError: Error | undefined;
  child.once('error', (err) => {
    spawnError = err;
  });
  try {
    await waitForServer(o.address, o.timeoutMs, {
      namespace: o.namespace,
      check() {
        if (spawnError)
          throw new DevServerStartError(
            o.address,
            `could not be spawned (${spawnError.message})`,
            [],
            logFile,
          );
        if (hasExited(child)) {
          const how = child.signalCode
            ? `was killed by ${child.signalCode}`
            : `exited with code ${child.exitCode}`;
          throw new DevServerStartError(o.address, `${how} before it answered`, logTail(), logFile);
        }
      },
      onTimeout: (ms) =>
        new DevServerStartError(o.address, `did not answer within ${ms / 1000}s`, logTail(), logFile),
    });
  } catch (err) {
    await cleanUp().catch(() => {});
    throw err;
  }
}

function killAttachedChildren(): void {
  for (const child of attachedChildren) child.kill('SIGKILL');
}
