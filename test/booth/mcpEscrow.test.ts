import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createNotifyServer, readOutbox } from '../../examples/accounting/notifyServer';
import {
  McpConnections,
  McpEscrow,
  McpServerUnavailableError,
  McpServerUnknownError,
  McpToolFailedError,
  McpToolUnknownError,
} from '../../src/booth/mcp';

const ROOT = path.resolve(__dirname, '../..');
const FS_SERVER = path.join(ROOT, 'node_modules/.bin/mcp-server-filesystem');

let base: string;
let files: string;
let outbox: string;
let connections: McpConnections;
const open: McpConnections[] = [];

function connect(extra: ConstructorParameters<typeof McpConnections>[0] = []) {
  const c = new McpConnections([
    // The operator trusts the official filesystem server's annotations: its readers run live.
    { name: 'fs', transport: { kind: 'stdio', command: FS_SERVER, args: [files] }, trusted: true },
    {
      name: 'notify',
      transport: {
        kind: 'in-process',
        createServer: () => createNotifyServer({ outbox, refuseCustomers: ['C-404'] }),
      },
    },
    ...extra,
  ]);
  open.push(c);
  return c;
}

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-mcp-')));
  files = path.join(base, 'files');
  fs.mkdirSync(files);
  fs.writeFileSync(path.join(files, 'ledger.txt'), 'opening balance 100\n');
  outbox = path.join(base, 'outbox.json');
  connections = connect();
});

afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
  fs.rmSync(base, { recursive: true, force: true });
});

afterAll(async () => {
  for (const c of open) await c.close();
});

/** The filesystem server marks write_file destructive: a person approves exactly this call first. */
function approved(escrow: McpEscrow, server: string, tool: string, args: Record<string, unknown>) {
  escrow.allow([{ approvalId: `test-${tool}`, server, tool, asked: { ...args }, args: { ...args } }]);
  return escrow.call(server, tool, args);
}

const staging = () => path.join(base, 'staging', 'mcp');
const textOf = (r: { content: unknown[] }) => (r.content[0] as { text: string }).text;

describe('McpEscrow over the official SDK client', () => {
  it('runs a readOnlyHint tool of a trusted server live against the real filesystem server', async () => {
    const escrow = new McpEscrow(connections, staging());
    const out = await escrow.call('fs', 'read_text_file', { path: path.join(files, 'ledger.txt') });
    expect(out.mode).toBe('live');
    if (out.mode === 'live') expect(textOf(out.result)).toContain('opening balance 100');
    expect(await escrow.calls()).toEqual([]);
  });

  it('holds a write in escrow until commit, then runs the calls in the order they were staged', async () => {
    const escrow = new McpEscrow(connections, staging());
    const dir = path.join(files, 'reports');
    const file = path.join(dir, 'q1.txt');
    // The order matters: write_file into a directory that only the first call creates.
    expect((await escrow.call('fs', 'create_directory', { path: dir })).mode).toBe('escrowed');
    expect(await approved(escrow, 'fs', 'write_file', { path: file, content: 'Q1 done\n' })).toMatchObject({
      mode: 'escrowed',
      seq: 1,
    });
    expect(fs.existsSync(dir)).toBe(false);
    expect((await escrow.calls()).map((c) => [c.seq, c.tool, c.state])).toEqual([
      [0, 'create_directory', 'escrowed'],
      [1, 'write_file', 'escrowed'],
    ]);

    const result = await escrow.commit();
    expect(result).toMatchObject({ applied: 2, skipped: 0 });
    expect(fs.readFileSync(file, 'utf8')).toBe('Q1 done\n');
    expect((await escrow.calls()).map((c) => c.state)).toEqual(['applied', 'applied']);
  });

  it('keeps the escrow on disk: a new instance (a restarted worker) sees and commits it', async () => {
    await new McpEscrow(connections, staging()).call('notify', 'notify_customer', {
      customer: 'C-1',
      message: 'refund issued',
      notificationId: 'r-1',
    });
    expect(readOutbox(outbox)).toEqual([]);
    const other = connect();
    const again = new McpEscrow(other, staging());
    expect((await again.calls()).map((c) => c.tool)).toEqual(['notify_customer']);
    await again.commit();
    expect(readOutbox(outbox)).toEqual([{ id: 'r-1', customer: 'C-1', message: 'refund issued' }]);
  });

  it('a retry after a crash between calls skips what was applied and finishes the rest once', async () => {
    const crashAt = 'mcp:call-applied:0';
    const crashing = new McpEscrow(connections, staging(), (point) => {
      if (point === crashAt) throw new Error('simulated crash');
    });
    await crashing.call('notify', 'notify_customer', { customer: 'C-1', message: 'one' });
    await crashing.call('notify', 'notify_customer', { customer: 'C-2', message: 'two' });
    await expect(crashing.commit()).rejects.toThrow('simulated crash');
    expect(readOutbox(outbox).map((n) => n.customer)).toEqual(['C-1']);

    const retry = await new McpEscrow(connections, staging()).commit();
    expect(retry).toMatchObject({ applied: 1, skipped: 1 });
    expect(readOutbox(outbox).map((n) => n.customer)).toEqual(['C-1', 'C-2']);
  });

  it('re-sends a call caught in flight with the same idempotency key, so the server applies it once', async () => {
    const crashing = new McpEscrow(connections, staging(), (point) => {
      if (point === 'mcp:before-call:0') throw new Error('simulated crash');
    });
    await crashing.call('notify', 'notify_customer', { customer: 'C-1', message: 'one' });
    await expect(crashing.commit()).rejects.toThrow('simulated crash');
    expect((await crashing.calls())[0]!.state).toBe('applying');
    // Apply it "behind our back" with the key the escrow sends, as if the crash came after the server acted.
    const key = (await crashing.calls())[0]!.key;
    const client = await connections.client('notify');
    await client.callTool({
      name: 'notify_customer',
      arguments: { customer: 'C-1', message: 'one' },
      _meta: { 'jukebox/idempotencyKey': key },
    });
    await new McpEscrow(connections, staging()).commit();
    expect(readOutbox(outbox)).toEqual([{ id: key, customer: 'C-1', message: 'one' }]);
  });

  it('compensates applied calls newest first when a later call fails, and reports those it cannot undo', async () => {
    const escrow = new McpEscrow(connections, staging());
    await escrow.call(
      'notify',
      'notify_customer',
      { customer: 'C-1', message: 'refund', notificationId: 'n1' },
      { compensate: { tool: 'retract_notification', arguments: { notificationId: 'n1' } } },
    );
    await approved(escrow, 'fs', 'write_file', { path: path.join(files, 'note.txt'), content: 'x' });
    await escrow.call('notify', 'notify_customer', { customer: 'C-404', message: 'refund' });

    const err = await escrow.commit().catch((e) => e);
    expect(err).toBeInstanceOf(McpToolFailedError);
    expect(err.message).toContain('C-404 cannot be reached');
    expect(readOutbox(outbox).map((n) => n.id)).toEqual(['n1']);

    const undone = await escrow.compensate();
    expect(undone.compensated).toEqual([
      { seq: 0, server: 'notify', tool: 'notify_customer', by: 'retract_notification' },
    ]);
    // write_file was given no compensating call: it stays done and is named, not silently kept.
    expect(undone.uncompensated).toEqual([{ seq: 1, server: 'fs', tool: 'write_file' }]);
    expect(readOutbox(outbox)).toEqual([]);
    expect((await escrow.calls()).map((c) => c.state)).toEqual(['compensated', 'uncompensated', 'failed']);
  });

  it('discard drops the escrow: nothing escrowed ever runs', async () => {
    const escrow = new McpEscrow(connections, staging());
    await escrow.call('notify', 'notify_customer', { customer: 'C-1', message: 'never sent' });
    await escrow.discard();
    expect(fs.existsSync(staging())).toBe(false);
    expect(await escrow.commit()).toMatchObject({ applied: 0 });
    expect(readOutbox(outbox)).toEqual([]);
  });

  it('refuses an unknown tool or server before anything is escrowed', async () => {
    const escrow = new McpEscrow(connections, staging());
    const err = await escrow.call('fs', 'delete_everything', {}).catch((e) => e);
    expect(err).toBeInstanceOf(McpToolUnknownError);
    expect(err.message).toContain('write_file');
    expect(err.nonRetryable).toBe(true);
    await expect(escrow.call('mail', 'send', {})).rejects.toBeInstanceOf(McpServerUnknownError);
    await expect(
      escrow.call(
        'notify',
        'notify_customer',
        { customer: 'C-1', message: 'm' },
        {
          compensate: { tool: 'unsend', arguments: {} },
        },
      ),
    ).rejects.toBeInstanceOf(McpToolUnknownError);
    expect(fs.existsSync(staging())).toBe(false);
  });

  it('a server that is down is a retryable McpServerUnavailableError naming the server and its stderr', async () => {
    const down = connect([
      {
        name: 'crashing',
        transport: {
          kind: 'stdio',
          command: process.execPath,
          args: ['-e', 'console.error("db password expired"); process.exit(3)'],
        },
      },
      { name: 'missing', transport: { kind: 'stdio', command: path.join(base, 'no-such-binary') } },
    ]);
    const escrow = new McpEscrow(down, staging());
    const crashed = await escrow.call('crashing', 'anything', {}).catch((e) => e);
    expect(crashed).toBeInstanceOf(McpServerUnavailableError);
    expect(crashed.nonRetryable).toBe(false);
    expect(crashed.message).toContain('"crashing"');
    expect(crashed.message).toContain('db password expired');
    const missing = await escrow.call('missing', 'anything', {}).catch((e) => e);
    expect(missing).toBeInstanceOf(McpServerUnavailableError);
    expect(missing.message).toContain('ENOENT');
    expect(fs.existsSync(staging())).toBe(false);
  });

  it('a server that dies between staging and commit fails the commit retryably and applies nothing', async () => {
    const pidFile = path.join(base, 'server.pid');
    const wrapper = path.join(base, 'fs-server.sh');
    fs.writeFileSync(wrapper, `#!/bin/sh\necho $$ > ${pidFile}\nexec ${FS_SERVER} ${files}\n`, {
      mode: 0o755,
    });
    const c = connect([{ name: 'fragile', transport: { kind: 'stdio', command: wrapper } }]);
    const escrow = new McpEscrow(c, staging());
    const target = path.join(files, 'late.txt');
    await approved(escrow, 'fragile', 'write_file', { path: target, content: 'late' });
    process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
    fs.writeFileSync(wrapper, '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    await new Promise((r) => setTimeout(r, 200));
    const err = await escrow.commit().catch((e) => e);
    expect(err).toBeInstanceOf(McpServerUnavailableError);
    expect(fs.existsSync(target)).toBe(false);
    expect((await escrow.calls())[0]!.state).toBe('applying');
  });
});
