/**
 * The Versity S3 Gateway as the tests' S3-compatible object store: one `versitygw posix` process on 127.0.0.1
 * storing buckets as folders under `.jukebox/state/versitygw-<port>/`, detached with a pidfile so scripts and
 * test runs reuse it. It checks SigV4 signatures against its root credentials.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ObjectBucket } from '../../src/recorder/objectBucket';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { isAlive, withFileLock } from '../devserver/fileLock';
import { isPortFree } from '../devserver/ports';
import { terminatePid } from '../devserver/processControl';
import { tailFile } from '../devserver/stateFiles';
import { stderrLog } from '../devserver/temporalCli';
import { ObjectServerError } from './errors';
import { ensureVersitygw } from './install';

export const DEFAULT_S3_PORT = 7833;
/** Credentials of the test server's only identity; they guard nothing but a throwaway local store. */
export const TEST_S3_CREDENTIALS = { accessKeyId: 'jukebox', secretAccessKey: 'jukebox-local-test-secret' };
export const DEFAULT_TEST_BUCKET = 'jukebox-tapes';

export interface ObjectServerHandle {
  endpoint: string;
  port: number;
  credentials: typeof TEST_S3_CREDENTIALS;
  reused: boolean;
  pid: number | undefined;
  logFile: string;
  /** A client for `bucket` on this server (created when missing). */
  bucket(name?: string): Promise<ObjectBucket>;
  /** The environment a worker needs to record into `s3://<bucket>/<prefix>` on this server. */
  workerEnv(bucket?: string, prefix?: string): Record<string, string>;
  stop(): Promise<void>;
}

export function objectServerPortFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.JUKEBOX_S3_PORT?.trim() || String(DEFAULT_S3_PORT);
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 55535)
    throw new ObjectServerError(`JUKEBOX_S3_PORT is "${text}"; use a number from 1 to 55535`);
  return port;
}

export function objectServerFiles(projectRoot: string | undefined, port: number) {
  const { stateDir } = jukeboxPaths(projectRoot ?? defaultProjectRoot());
  const root = path.join(stateDir, `versitygw-${port}`);
  return {
    stateDir,
    root,
    dataDir: path.join(root, 'data'),
    logFile: path.join(root, 'versitygw.log'),
    pidFile: path.join(root, 'versitygw.pid'),
  };
}

export async function startObjectServer(
  options: {
    projectRoot?: string;
    env?: NodeJS.ProcessEnv;
    log?: (m: string) => void;
    timeoutMs?: number;
  } = {},
): Promise<ObjectServerHandle> {
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const port = objectServerPortFromEnv(env);
  const files = objectServerFiles(options.projectRoot, port);
  const endpoint = `http://127.0.0.1:${port}`;
  const timeoutMs = options.timeoutMs ?? 90_000;
  const handle = (
    reused: boolean,
    pid: number | undefined,
    stop: () => Promise<void>,
  ): ObjectServerHandle => ({
    endpoint,
    port,
    credentials: TEST_S3_CREDENTIALS,
    reused,
    pid,
    logFile: files.logFile,
    async bucket(name = DEFAULT_TEST_BUCKET) {
      const b = new ObjectBucket({ endpoint, bucket: name, credentials: TEST_S3_CREDENTIALS });
      await b.createBucket();
      return b;
    },
    workerEnv(bucket = DEFAULT_TEST_BUCKET, prefix = 'tapes/') {
      return {
        JUKEBOX_TAPE_STORE: `s3://${bucket}/${prefix}`,
        JUKEBOX_S3_ENDPOINT: endpoint,
        AWS_ACCESS_KEY_ID: TEST_S3_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: TEST_S3_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
      };
    },
    stop,
  });
  if (await answers(endpoint)) return handle(true, undefined, async () => {});
  fs.mkdirSync(files.dataDir, { recursive: true });
  return withFileLock(`${files.pidFile}.lock`, log, async () => {
    if (await answers(endpoint)) return handle(true, undefined, async () => {});
    if (!(await isPortFree('127.0.0.1', port)))
      throw new ObjectServerError(`port ${port} on 127.0.0.1 is taken; set JUKEBOX_S3_PORT to a free one`);
    const binary = await ensureVersitygw({ projectRoot: options.projectRoot, log, env });
    const args = [
      '--port',
      `127.0.0.1:${port}`,
      '--access',
      TEST_S3_CREDENTIALS.accessKeyId,
      '--secret',
      TEST_S3_CREDENTIALS.secretAccessKey,
      '--quiet',
      'posix',
      files.dataDir,
    ];
    log(`starting versitygw S3 on ${endpoint} (data ${files.dataDir})`);
    const from = fs.existsSync(files.logFile) ? fs.statSync(files.logFile).size : 0;
    const fd = fs.openSync(files.logFile, 'a');
    const child = spawn(binary, args, { env, stdio: ['ignore', fd, fd], detached: true });
    fs.closeSync(fd);
    child.unref();
    const pid = child.pid;
    if (pid !== undefined) fs.writeFileSync(files.pidFile, `${pid}\n`);
    const stop = async () => {
      if (pid !== undefined) await terminatePid(pid);
      fs.rmSync(files.pidFile, { force: true });
    };
    const deadline = Date.now() + timeoutMs;
    const probe = new ObjectBucket({
      endpoint,
      bucket: DEFAULT_TEST_BUCKET,
      credentials: TEST_S3_CREDENTIALS,
    });
    try {
      for (;;) {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new ObjectServerError(
            `versitygw exited (${child.exitCode ?? child.signalCode}) before S3 answered: ${tailFile(files.logFile, from, 10).join(' | ')}`,
            files.logFile,
          );
        // Ready means a signed request succeeds end to end: creating the bucket.
        const ok = await probe.createBucket().then(
          () => true,
          () => false,
        );
        if (ok) break;
        if (Date.now() > deadline) {
          await stop();
          throw new ObjectServerError(
            `versitygw did not answer on ${endpoint} within ${timeoutMs} ms`,
            files.logFile,
          );
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    } finally {
      probe.destroy();
    }
    return handle(false, pid, stop);
  });
}

/** Stops the server whose pidfile is under the state folder of JUKEBOX_S3_PORT; true when one ran. */
export async function stopObjectServer(
  options: { projectRoot?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<boolean> {
  const files = objectServerFiles(options.projectRoot, objectServerPortFromEnv(options.env));
  const pid = Number(fs.existsSync(files.pidFile) ? fs.readFileSync(files.pidFile, 'utf8').trim() : 0) || 0;
  fs.rmSync(files.pidFile, { force: true });
  if (pid <= 0 || !isAlive(pid) || !isVersitygw(pid)) return false;
  await terminatePid(pid);
  return true;
}

function isVersitygw(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('versitygw');
  } catch {
    return false;
  }
}

/** Anything that answers HTTP on the S3 port with an S3-shaped reply. */
async function answers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(endpoint, { signal: AbortSignal.timeout(1_500) });
    await res.arrayBuffer();
    return res.status < 500 && (res.headers.get('server') ?? '').toUpperCase().includes('VERSITYGW');
  } catch {
    return false;
  }
}
