import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runJbx } from '../../timetravel/replay/jbx';
import { recordEffectsRun } from './viewerFixtures';

const BIN = path.join(__dirname, '../../../src/cli/bin.js');

/** Starts `jbx view ... --json` and resolves with its ready document once stdout holds all of it. */
function startView(
  args: string[],
): Promise<{ child: ChildProcess; ready: { url: string; port: number; dir: string; open: string | null } }> {
  const child = spawn(process.execPath, [BIN, 'view', ...args, '--json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
      try {
        resolve({ child, ready: JSON.parse(out) });
      } catch {}
    });
    child.stderr!.on('data', (d) => {
      err += d;
    });
    child.on('close', (code) => reject(new Error(`jbx view exited ${code} before it was ready: ${err}`)));
  });
}

describe('jbx view: serves a folder or a tape on 127.0.0.1 until SIGINT / SIGTERM', () => {
  let dir: string;
  let tape: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-view-cli-'));
    tape = await recordEffectsRun(dir);
  });
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  });

  it('prints one JSON ready document, answers the API, and exits 0 on SIGTERM', async () => {
    const { child, ready } = await startView([tape, '--port', '0']);
    children.push(child);
    expect(ready.dir).toBe(dir);
    expect(ready.open).toBe(path.basename(tape, '.jbx'));
    expect(ready.url).toBe(`http://127.0.0.1:${ready.port}/#/run/${encodeURIComponent(ready.open!)}`);
    const runs = (await (await fetch(`http://127.0.0.1:${ready.port}/api/runs`)).json()) as {
      rows: { id: string }[];
    };
    expect(runs.rows.map((r) => r.id)).toEqual([ready.open]);
    const exited = new Promise<number | null>((r) => child.on('close', r));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('exits 2 on a missing path, a file that is not a tape, a bad port; 1 when the port is taken', async () => {
    const missing = await runJbx(['view', path.join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no such file or folder/);
    const text = path.join(dir, 'notes.txt');
    writeFileSync(text, 'hello');
    const notTape = await runJbx(['view', text]);
    expect(notTape.code).toBe(2);
    expect(notTape.stderr).toMatch(/is not a \.jbx tape/);
    const badPort = await runJbx(['view', dir, '--port', 'eighty']);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toMatch(/--port must be an integer/);

    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    try {
      const port = (blocker.address() as net.AddressInfo).port;
      const taken = await runJbx(['view', dir, '--port', String(port)]);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toMatch(new RegExp(`port ${port} on 127.0.0.1 is in use`));
    } finally {
      blocker.close();
    }
  });
});
