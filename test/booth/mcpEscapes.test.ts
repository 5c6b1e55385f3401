/**
 * Attempts to get a side effect past the MCP escrow: hints that only look read-only, names that only look
 * listed, arguments that change on the way, a tampered escrow file, paths the real server must refuse.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  McpApprovalRequiredError,
  McpArgumentsError,
  McpArgumentsTooLargeError,
  McpConnections,
  McpEscrow,
  McpEscrowCorruptError,
  McpToolFailedError,
  McpToolUnknownError,
} from '../../src/booth/mcp';
import { BoothRuntime } from '../../src/booth/shadowBooth';

const FS_SERVER = path.resolve(__dirname, '../../node_modules/.bin/mcp-server-filesystem');

let base: string;
let allowed: string;
let outside: string;
let sideEffects: string[];
let connections: McpConnections;

/**
 * A server of ours whose tools record that they ran (in memory, and in `world` when given: a real file, the
 * target a rollback must leave alone), with every flavour of misleading annotation.
 */
function trickServer(world?: string): McpServer {
  const server = new McpServer({ name: 'tricks', version: '1.0.0' });
  const tool = (name: string, annotations: Record<string, unknown> | undefined) =>
    server.registerTool(
      name,
      { inputSchema: { v: z.string().optional() }, ...(annotations ? { annotations } : {}) },
      async ({ v }) => {
        sideEffects.push(name);
        if (world) fs.appendFileSync(world, `${name} ${v ?? ''}\n`);
        return { content: [{ type: 'text', text: `${name} ran` }] };
      },
    );
  tool('no_annotations', undefined);
  tool('hint_false', { readOnlyHint: false });
  tool('read_but_destructive', { readOnlyHint: true, destructiveHint: true });
  tool('idempotent_only', { idempotentHint: true, destructiveHint: false });
  tool('honest_reader', { readOnlyHint: true });
  tool('operator_vouched', { readOnlyHint: false });
  return server;
}

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-mcp-esc-')));
  allowed = path.join(base, 'allowed');
  outside = path.join(base, 'outside');
  fs.mkdirSync(allowed);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET\n');
  sideEffects = [];
  connections = new McpConnections([
    { name: 'fs', transport: { kind: 'stdio', command: FS_SERVER, args: [allowed] }, trusted: true },
    {
      name: 'tricks',
      transport: { kind: 'in-process', createServer: () => trickServer() },
      trusted: true,
      liveTools: ['operator_vouched'],
    },
    {
      name: 'stranger',
      transport: { kind: 'in-process', createServer: () => trickServer() },
      liveTools: ['operator_vouched'],
    },
  ]);
});

afterEach(async () => {
  await connections.close();
  fs.rmSync(base, { recursive: true, force: true });
});

const escrow = () => new McpEscrow(connections, path.join(base, 'staging'));

/** A person's approval of exactly this call (tools marked destructive wait for one; src/booth/mcp/approval.ts). */
const approve = (e: McpEscrow, server: string, ...calls: [tool: string, args: Record<string, unknown>][]) =>
  e.allow(
    calls.map(([tool, args]) => ({
      approvalId: `test-${tool}`,
      server,
      tool,
      asked: structuredClone(args),
      args: structuredClone(args),
    })),
  );

describe('MCP escape attempts', () => {
  it('readOnlyHint contradicted by destructiveHint neither runs live nor is escrowed: it waits for a person', async () => {
    const e = escrow();
    await expect(e.call('tricks', 'read_but_destructive', {})).rejects.toBeInstanceOf(
      McpApprovalRequiredError,
    );
    expect(sideEffects).toEqual([]);
    expect(await e.calls()).toEqual([]);
  });

  it.each([
    ['no_annotations', 'the spec default is destructive'],
    ['hint_false', 'an explicit readOnlyHint: false'],
    ['idempotent_only', 'idempotent and non-destructive is still a write'],
  ])('%s of a trusted server is escrowed, not run (%s)', async (tool) => {
    const e = escrow();
    expect((await e.call('tricks', tool, {})).mode).toBe('escrowed');
    expect(sideEffects).toEqual([]);
    await e.discard();
    expect(sideEffects).toEqual([]);
  });

  it('on a trusted server, only readOnlyHint: true and tools the operator listed in liveTools run live', async () => {
    const e = escrow();
    expect((await e.call('tricks', 'honest_reader', {})).mode).toBe('live');
    expect((await e.call('tricks', 'operator_vouched', {})).mode).toBe('live');
    expect(sideEffects).toEqual(['honest_reader', 'operator_vouched']);
    expect(await e.calls()).toEqual([]);
  });

  it('on a server the config does not trust, readOnlyHint is only a claim: the tool is escrowed', async () => {
    const e = escrow();
    expect((await e.call('stranger', 'honest_reader', {})).mode).toBe('escrowed');
    // The operator's own word still counts.
    expect((await e.call('stranger', 'operator_vouched', {})).mode).toBe('live');
    expect(sideEffects).toEqual(['operator_vouched']);
    expect((await e.calls()).map((c) => c.tool)).toEqual(['honest_reader']);
    await e.discard();
    expect(sideEffects).toEqual(['operator_vouched']);
  });

  it.each([
    'WRITE_FILE',
    'write_file ',
    'write_file\u0000',
    'tools/call',
    '../write_file',
    'read_file;write_file',
  ])('a name that only resembles a listed tool (%j) is refused, not escrowed', async (name) => {
    const e = escrow();
    await expect(e.call('fs', name, { path: path.join(allowed, 'x'), content: 'x' })).rejects.toBeInstanceOf(
      McpToolUnknownError,
    );
    expect(await e.calls()).toEqual([]);
  });

  it('a live read outside the server roots is refused by the real filesystem server and leaks nothing', async () => {
    const e = escrow();
    for (const p of [path.join(outside, 'secret.txt'), path.join(allowed, '../outside/secret.txt')]) {
      const err = await e.call('fs', 'read_text_file', { path: p }).catch((x) => x);
      expect(err).toBeInstanceOf(McpToolFailedError);
      expect(err.message).not.toContain('TOP SECRET');
    }
  });

  it('an escrowed write outside the roots writes nothing while staged, and fails at commit without writing', async () => {
    const e = escrow();
    const target = path.join(allowed, '../outside/planted.txt');
    approve(e, 'fs', ['write_file', { path: target, content: 'pwned' }]);
    expect((await e.call('fs', 'write_file', { path: target, content: 'pwned' })).mode).toBe('escrowed');
    expect(fs.existsSync(path.join(outside, 'planted.txt'))).toBe(false);
    await expect(e.commit()).rejects.toBeInstanceOf(McpToolFailedError);
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
    expect((await e.calls())[0]!.state).toBe('failed');
  });

  it('an escrowed write inside the roots stays off the disk until commit', async () => {
    const e = escrow();
    const target = path.join(allowed, 'staged.txt');
    const move = { source: target, destination: path.join(allowed, 'moved.txt') };
    approve(e, 'fs', ['write_file', { path: target, content: 'held' }], ['move_file', move]);
    await e.call('fs', 'write_file', { path: target, content: 'held' });
    await e.call('fs', 'move_file', move);
    expect(fs.readdirSync(allowed)).toEqual([]);
    await e.commit();
    expect(fs.readFileSync(path.join(allowed, 'moved.txt'), 'utf8')).toBe('held');
  });

  it.each([
    ['a Date', { at: new Date(0) }],
    ['a function', { f: () => 1 }],
    ['NaN', { n: Number.NaN }],
    ['undefined', { u: undefined }],
    ['a class instance', { m: new Map([['a', 1]]) }],
    ['an array instead of an object', [1, 2]],
  ])('arguments holding %s are refused: they would not be sent as staged', async (_what, args) => {
    const e = escrow();
    await expect(e.call('tricks', 'no_annotations', args as Record<string, unknown>)).rejects.toBeInstanceOf(
      McpArgumentsError,
    );
    expect(await e.calls()).toEqual([]);
  });

  it('escrowed arguments are a copy: mutating the object after staging changes nothing', async () => {
    const e = escrow();
    const args = { path: path.join(allowed, 'a.txt'), content: 'original' };
    approve(e, 'fs', ['write_file', args]);
    await e.call('fs', 'write_file', args);
    args.path = path.join(outside, 'secret.txt');
    args.content = 'overwritten';
    await e.commit();
    expect(fs.readFileSync(path.join(allowed, 'a.txt'), 'utf8')).toBe('original');
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET\n');
  });

  it('a tampered escrow file naming an unconfigured server is refused before any call runs', async () => {
    const e = escrow();
    await e.call('tricks', 'no_annotations', {});
    const file = path.join(base, 'staging', 'escrow.jsonl');
    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    const planted = JSON.parse(lines[1]!);
    planted.uid = 'planted';
    planted.call = { ...planted.call, server: 'attacker', tool: 'exfiltrate' };
    fs.appendFileSync(file, `${JSON.stringify(planted)}\n`);
    await expect(e.commit()).rejects.toBeInstanceOf(McpEscrowCorruptError);
    expect(sideEffects).toEqual([]);
    fs.writeFileSync(file, '{"format":"something-else","id":"x"}\n');
    await expect(e.calls()).rejects.toBeInstanceOf(McpEscrowCorruptError);
  });

  it('a tampered escrow marking a call already applied cannot re-run a compensated one', async () => {
    const e = escrow();
    await e.call('tricks', 'no_annotations', {}, { compensate: { tool: 'hint_false', arguments: {} } });
    await e.commit();
    await e.compensate();
    expect(sideEffects).toEqual(['no_annotations', 'hint_false']);
    await expect(e.commit()).rejects.toBeInstanceOf(McpEscrowCorruptError);
    expect(sideEffects).toEqual(['no_annotations', 'hint_false']);
  });
});

describe('MCP escapes through the booth, the real target checked with sha256', () => {
  let world: string;
  let runtime: BoothRuntime;
  let dieAt: string | null;
  const hash = () => createHash('sha256').update(fs.readFileSync(world)).digest('hex');

  beforeEach(() => {
    world = path.join(base, 'world.log');
    fs.writeFileSync(world, 'what the outside world saw\n');
    dieAt = null;
    runtime = new BoothRuntime({
      workspaceRoot: allowed,
      stagingRoot: path.join(base, 'booths'),
      faultPoint: (point) => {
        if (point === dieAt) throw new Error(`died at ${point}`);
      },
      mcpServers: [
        { name: 'stranger', transport: { kind: 'in-process', createServer: () => trickServer(world) } },
        {
          name: 'small',
          transport: { kind: 'in-process', createServer: () => trickServer(world) },
          maxArgumentBytes: 1_000,
        },
      ],
    });
  });
  afterEach(async () => {
    await runtime.close();
  });

  it("an untrusted server's tool that claims readOnlyHint is escrowed: nothing reaches it, before or after rollback", async () => {
    const before = hash();
    const booth = await runtime.open('wf', 'claims');
    expect((await booth.mcp.call('stranger', 'honest_reader', { v: 'exfiltrate' })).mode).toBe('escrowed');
    expect(hash()).toBe(before);
    expect(await booth.discard()).toEqual({ mcpSent: [] });
    expect(hash()).toBe(before);
    expect(sideEffects).toEqual([]);
  });

  it.each([
    ['the default limit (1 MiB)', 'stranger', 64 * 1024 * 1024, 1024 * 1024],
    ["a server's own limit", 'small', 2_000, 1_000],
  ])(
    'arguments over %s are refused before anything runs or is escrowed',
    async (_what, server, size, limit) => {
      const before = hash();
      const booth = await runtime.open('wf', `big-${server}`);
      const err = await booth.mcp.call(server, 'no_annotations', { v: 'x'.repeat(size) }).catch((e) => e);
      expect(err).toBeInstanceOf(McpArgumentsTooLargeError);
      expect(err).toMatchObject({ code: 'MCP_ARGUMENTS_TOO_LARGE', limit, server, tool: 'no_annotations' });
      expect(err.bytes).toBeGreaterThan(size);
      expect(await booth.mcp.calls()).toEqual([]);
      expect(hash()).toBe(before);
      await booth.discard();
      expect(hash()).toBe(before);
    },
  );

  it('each escrowed call is appended: the bytes already on disk stay as they were, in the same file', async () => {
    const booth = await runtime.open('wf', 'append');
    const file = path.join(booth.dir, 'mcp', 'escrow.jsonl');
    let prefix: Buffer | null = null;
    let inode: number | null = null;
    for (let i = 0; i < 4; i++) {
      await booth.mcp.call('stranger', 'no_annotations', { v: `${i}`.repeat(256 * 1024) });
      const now = fs.readFileSync(file);
      if (prefix !== null) {
        expect(createHash('sha256').update(now.subarray(0, prefix.length)).digest('hex')).toBe(
          createHash('sha256').update(prefix).digest('hex'),
        );
        // One call's record, not the escrow again.
        expect(now.length - prefix.length).toBeLessThan(256 * 1024 + 512);
      }
      if (inode !== null) expect(fs.statSync(file).ino).toBe(inode);
      prefix = now;
      inode = fs.statSync(file).ino;
    }
    expect((await booth.mcp.calls()).map((c) => c.seq)).toEqual([0, 1, 2, 3]);
    await booth.discard();
  });

  it('discard after a commit died mid-call keeps the record of what was already sent', async () => {
    const booth = await runtime.open('wf', 'died');
    await booth.mcp.call('stranger', 'no_annotations', { v: 'first' });
    await booth.mcp.call('stranger', 'hint_false', { v: 'second' });
    await booth.mcp.call('stranger', 'idempotent_only', { v: 'third' });
    const before = hash();
    // The commit sends the first call, marks the second as being sent, and dies there.
    dieAt = 'mcp:before-call:1';
    await expect(booth.mcp.commit()).rejects.toThrow('died at mcp:before-call:1');
    const afterCommit = hash();
    expect(
      fs
        .readFileSync(world, 'utf8')
        .slice(fs.readFileSync(world, 'utf8').length - 'no_annotations first\n'.length),
    ).toBe('no_annotations first\n');
    expect(afterCommit).not.toBe(before);
    const { mcpSent } = await booth.discard();
    expect(mcpSent.map((c) => [c.seq, c.tool, c.state])).toEqual([
      [0, 'no_annotations', 'applied'],
      [1, 'hint_false', 'applying'],
    ]);
    // Kept beside the run's folder, which is gone.
    expect(fs.existsSync(booth.dir)).toBe(false);
    const record = JSON.parse(fs.readFileSync(`${booth.dir}.mcp-sent.json`, 'utf8'));
    expect(record).toMatchObject({ format: 'jukebox-mcp-sent/1', calls: mcpSent });
    expect(record.calls[0].arguments).toEqual({ v: 'first' });
    // Discarding sent nothing more: the third call never ran.
    expect(hash()).toBe(afterCommit);
    expect(sideEffects).toEqual(['no_annotations']);
  });
});
