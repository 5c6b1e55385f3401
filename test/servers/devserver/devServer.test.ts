import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  type DevServerHandle,
  DevServerPortTakenError,
  DevServerStartError,
  ensureTemporalCli,
  freePort,
  isServerUp,
  splitAddress,
  startDevServer,
  TemporalCliNotFoundError,
} from '../../../servers/devserver';

const MISSING_CLI = '/nonexistent/jukebox/temporal';
const started: DevServerHandle[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jukebox-devserver-'));

/** Dev server processes serving `port` on this machine, from their command lines. */
function devServerPids(port: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv.includes('start-dev') && argv[argv.indexOf('--port') + 1] === String(port);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function start(options: Parameters<typeof startDevServer>[0]): Promise<DevServerHandle> {
  const handle = await startDevServer({ cliPath: await ensureTemporalCli(), log: () => {}, ...options });
  started.push(handle);
  return handle;
}

afterAll(async () => {
  for (const handle of started) await handle.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the Temporal dev server', () => {
  it('hands test files the suite server through env and inject()', () => {
    expect(process.env.JUKEBOX_TEMPORAL_ADDRESS).toBe(inject('temporalAddress'));
    expect(process.env.JUKEBOX_TEMPORAL_NAMESPACE).toBe(inject('temporalNamespace'));
  });

  it('reuses a server that already answers instead of starting a second one', async () => {
    const address = inject('temporalAddress');
    const namespace = inject('temporalNamespace');
    const { port } = splitAddress(address);
    const before = devServerPids(port);
    // A bad binary path proves nothing gets spawned: reuse must not even look at it.
    const handle = await startDevServer({ address, namespace, cliPath: MISSING_CLI, log: () => {} });
    expect(handle.reused).toBe(true);
    expect(handle.process).toBeUndefined();
    expect(devServerPids(port)).toEqual(before);
    await handle.stop();
    expect(await isServerUp(address, namespace)).toBe(true);
  });

  it('starts a second server on another port with its own db file and Web UI', async () => {
    const port = await freePort();
    const uiPort = await freePort();
    const dbFile = path.join(tmp, 'second.sqlite');
    const handle = await start({ port, uiPort, dbFile });
    expect(handle.reused).toBe(false);
    expect(handle.address).toBe(`127.0.0.1:${port}`);
    expect(devServerPids(port)).toEqual([handle.pid]);
    expect(await isServerUp(handle.address, 'jukebox')).toBe(true);
    expect(fs.existsSync(dbFile)).toBe(true);
    expect(handle.uiUrl).toBe(`http://127.0.0.1:${uiPort}`);
    expect((await fetch(handle.uiUrl!)).status).toBe(200);
    expect(await isServerUp(inject('temporalAddress'))).toBe(true);

    await handle.stop();
    expect(handle.process?.exitCode ?? handle.process?.signalCode).not.toBeNull();
    expect(await isServerUp(handle.address)).toBe(false);
  });

  it('keeps a workflow started before a SIGKILL when restarted on the same db file', async () => {
    const port = await freePort();
    const dbFile = path.join(tmp, 'crash.sqlite');
    const first = await start({ port, dbFile, headless: true });
    const workflowId = `survives-kill-${Date.now()}`;
    const connection = await Connection.connect({ address: first.address });
    try {
      const client = new Client({ connection, namespace: first.namespace });
      // No worker polls this queue, so the execution simply stays open on the server.
      await client.workflow.start('noWorkerForThis', { taskQueue: `nobody-${workflowId}`, workflowId });
    } finally {
      await connection.close();
    }

    await first.kill('SIGKILL');
    expect(first.process?.signalCode).toBe('SIGKILL');
    expect(await isServerUp(first.address)).toBe(false);

    const second = await start({ port, dbFile, headless: true });
    expect(second.reused).toBe(false);
    const again = await Connection.connect({ address: second.address });
    try {
      const description = await new Client({ connection: again, namespace: second.namespace }).workflow
        .getHandle(workflowId)
        .describe();
      expect(description.status.name).toBe('RUNNING');
      expect(description.type).toBe('noWorkerForThis');
    } finally {
      await again.close();
    }
  });

  it('names the port and the setting to change when something else holds the port', async () => {
    const blocker = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as net.AddressInfo;
    try {
      const attempt = start({ port, headless: true });
      await expect(attempt).rejects.toBeInstanceOf(DevServerPortTakenError);
      await expect(attempt).rejects.toThrow(new RegExp(`Port ${port} .*JUKEBOX_TEMPORAL_ADDRESS`, 's'));
      expect(devServerPids(port)).toEqual([]);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('says which binary is missing instead of failing to spawn', async () => {
    const port = await freePort();
    const attempt = startDevServer({ port, headless: true, cliPath: MISSING_CLI, log: () => {} });
    await expect(attempt).rejects.toBeInstanceOf(TemporalCliNotFoundError);
    await expect(attempt).rejects.toThrow(MISSING_CLI);

    const viaEnv = ensureTemporalCli({
      env: { ...process.env, JUKEBOX_TEMPORAL_CLI: MISSING_CLI },
      log: () => {},
    });
    await expect(viaEnv).rejects.toThrow(/JUKEBOX_TEMPORAL_CLI/);
  });

  it('reports the server log lines when the server exits before answering', async () => {
    const port = await freePort();
    // A directory where the SQLite file should be: the server cannot open it and exits.
    const attempt = start({ port, headless: true, dbFile: tmp });
    await expect(attempt).rejects.toBeInstanceOf(DevServerStartError);
    await expect(attempt).rejects.toThrow(
      /exited with code 1 before it answered[\s\S]*unable to open database/,
    );
  });
});
