/**
 * Attempts to get a side effect past the MCP escrow: hints that only look read-only, names that only look
 * listed, arguments that change on the way, a tampered escrow file, paths the real server must refuse.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  McpArgumentsError,
  McpConnections,
  McpEscrow,
  McpEscrowCorruptError,
  McpToolFailedError,
  McpToolUnknownError,
} from '../../src/booth/mcp';

const FS_SERVER = path.resolve(__dirname, '../../node_modules/.bin/mcp-server-filesystem');

let base: string;
let allowed: string;
let outside: string;
let sideEffects: string[];
let connections: McpConnections;

/** A server of ours whose tools only record that they ran, with every flavour of misleading annotation. */
function trickServer(): McpServer {
  const server = new McpServer({ name: 'tricks', version: '1.0.0' });
  const tool = (name: string, annotations: Record<string, unknown> | undefined) =>
    server.registerTool(
      name,
      { inputSchema: { v: z.string().optional() }, ...(annotations ? { annotations } : {}) },
      async () => {
        sideEffects.push(name);
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
    { name: 'fs', transport: { kind: 'stdio', command: FS_SERVER, args: [allowed] } },
    {
      name: 'tricks',
      transport: { kind: 'in-process', createServer: trickServer },
      liveTools: ['operator_vouched'],
    },
  ]);
});

afterEach(async () => {
  await connections.close();
  fs.rmSync(base, { recursive: true, force: true });
});

const escrow = () => new McpEscrow(connections, path.join(base, 'staging'));

describe('MCP escape attempts', () => {
  it.each([
    ['no_annotations', 'the spec default is destructive'],
    ['hint_false', 'an explicit readOnlyHint: false'],
    ['read_but_destructive', 'readOnlyHint contradicted by destructiveHint'],
    ['idempotent_only', 'idempotent and non-destructive is still a write'],
  ])('%s is escrowed, not run (%s)', async (tool) => {
    const e = escrow();
    expect((await e.call('tricks', tool, {})).mode).toBe('escrowed');
    expect(sideEffects).toEqual([]);
    await e.discard();
    expect(sideEffects).toEqual([]);
  });

  it('only readOnlyHint: true and tools the operator listed in liveTools run live', async () => {
    const e = escrow();
    expect((await e.call('tricks', 'honest_reader', {})).mode).toBe('live');
    expect((await e.call('tricks', 'operator_vouched', {})).mode).toBe('live');
    expect(sideEffects).toEqual(['honest_reader', 'operator_vouched']);
    expect(await e.calls()).toEqual([]);
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
    expect((await e.call('fs', 'write_file', { path: target, content: 'pwned' })).mode).toBe('escrowed');
    expect(fs.existsSync(path.join(outside, 'planted.txt'))).toBe(false);
    await expect(e.commit()).rejects.toBeInstanceOf(McpToolFailedError);
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
    expect((await e.calls())[0]!.state).toBe('failed');
  });

  it('an escrowed write inside the roots stays off the disk until commit', async () => {
    const e = escrow();
    const target = path.join(allowed, 'staged.txt');
    await e.call('fs', 'write_file', { path: target, content: 'held' });
    await e.call('fs', 'move_file', { source: target, destination: path.join(allowed, 'moved.txt') });
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
    const file = path.join(base, 'staging', 'escrow.json');
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    doc.calls.push({ ...doc.calls[0], seq: 1, server: 'attacker', tool: 'exfiltrate' });
    fs.writeFileSync(file, JSON.stringify(doc));
    await expect(e.commit()).rejects.toBeInstanceOf(McpEscrowCorruptError);
    expect(sideEffects).toEqual([]);
    fs.writeFileSync(file, '{"format":"something-else","calls":[]}');
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
