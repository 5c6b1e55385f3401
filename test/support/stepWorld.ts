/**
 * The world of the exactly-once tests: a workspace (a ledger to append to, a file to move, one to delete), a
 * database (SQLite file or a PostgreSQL database) with a counter and an events table without a natural key, and
 * the notify server's outbox. `recordPaymentTool` stages one of every kind of effect through the run's booth;
 * `readWorld` reads back what reached the real targets.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { createNotifyServer, readOutbox } from '../../examples/accounting/notifyServer';
import type { ToolDefinition } from '../../src/agent/tools';
import { requireBooth, type ShadowBoothConfig } from '../../src/booth/shadowBooth';

export interface StepWorld {
  dir: string;
  workspace: string;
  outbox: string;
  staging: string;
  sql: NonNullable<ShadowBoothConfig['sql']>;
}

/** A Shadow Booth over the world: its workspace, its database, the notify server in process; `more` adds to it. */
export function stepWorldBooth(world: StepWorld, more: Partial<ShadowBoothConfig> = {}): ShadowBoothConfig {
  return {
    workspaceRoot: world.workspace,
    stagingRoot: world.staging,
    sql: world.sql,
    mcpServers: [
      {
        name: 'notify',
        transport: { kind: 'in-process', createServer: () => createNotifyServer({ outbox: world.outbox }) },
      },
    ],
    ...more,
  };
}

/** A fresh world under `dir`; `pgUrl` (a server's admin URL) puts the tables in a new PostgreSQL database. */
export async function prepareStepWorld(dir: string, pgUrl?: string): Promise<StepWorld> {
  await fs.rm(dir, { recursive: true, force: true });
  const workspace = path.join(dir, 'workspace');
  await fs.mkdir(path.join(workspace, 'inbox'), { recursive: true });
  await fs.writeFile(path.join(workspace, 'ledger.csv'), 'kind,ref\n');
  await fs.writeFile(path.join(workspace, 'inbox/a.txt'), 'invoice a\n');
  await fs.writeFile(path.join(workspace, 'tmp.txt'), 'scratch\n');
  const outbox = path.join(dir, 'outbox.json');
  await fs.writeFile(outbox, `${JSON.stringify({ notifications: [] })}\n`);
  let sql: StepWorld['sql'];
  let serial: string;
  if (pgUrl) {
    const name = `steps_${Math.random().toString(36).slice(2, 10)}`;
    const admin = knexFactory({ client: 'pg', connection: pgUrl });
    await admin.raw(`CREATE DATABASE ${name}`);
    await admin.destroy();
    const url = new URL(pgUrl);
    url.pathname = `/${name}`;
    sql = { client: 'pg', connection: url.toString() };
    serial = 'SERIAL PRIMARY KEY';
  } else {
    const file = path.join(dir, 'world.sqlite');
    await fs.writeFile(file, '');
    sql = { client: 'sqlite3', connection: { filename: file } };
    serial = 'INTEGER PRIMARY KEY AUTOINCREMENT';
  }
  const db = open(sql);
  try {
    await db.raw('CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)');
    await db.raw("INSERT INTO counters VALUES ('payments', 0)");
    await db.raw(`CREATE TABLE events (id ${serial}, note TEXT NOT NULL)`);
  } finally {
    await db.destroy();
  }
  return { dir, workspace, outbox, staging: path.join(dir, 'staging'), sql };
}

function open(sql: StepWorld['sql']): Knex {
  return knexFactory({ client: sql.client, connection: sql.connection as never, useNullAsDefault: true });
}

export interface WorldState {
  ledger: string;
  files: string[];
  shellLog: string;
  counter: number;
  events: string[];
  notifications: string[];
}

async function listTree(root: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(`${p}/`, ...(await listTree(root, p)));
    else out.push(p);
  }
  return out.sort();
}

/** What the real targets hold: ledger and shell log contents, the tree, the counter, events and the outbox. */
export async function readWorld(w: StepWorld): Promise<WorldState> {
  const db = open(w.sql);
  try {
    const counter = await db('counters').where({ name: 'payments' }).first('n');
    const events = await db('events').orderBy('id').select('note');
    return {
      ledger: await fs.readFile(path.join(w.workspace, 'ledger.csv'), 'utf8'),
      files: await listTree(w.workspace),
      shellLog: await fs.readFile(path.join(w.workspace, 'shell.log'), 'utf8').catch(() => ''),
      counter: Number(counter?.n),
      events: events.map((e: { note: string }) => e.note),
      notifications: readOutbox(w.outbox).map((n) => n.message),
    };
  } finally {
    await db.destroy();
  }
}

/**
 * One of each effect: an append, a move and a delete of files, `UPDATE ... SET n = n + 1`, an INSERT without a
 * natural key, an escrowed `notify_customer` without a notification id, and a shell command appending to a file.
 */
export const recordPaymentTool: ToolDefinition = {
  spec: {
    name: 'record_payment',
    description: 'Records a payment everywhere',
    parameters: { type: 'object', properties: { ref: { type: 'string' } } },
  },
  async run(args, inv) {
    const ref = String(args.ref);
    const booth = requireBooth(inv, 'record_payment');
    await booth.files.appendFile('ledger.csv', `payment,${ref}\n`);
    if (await booth.files.exists('inbox/a.txt')) {
      await booth.files.mkdir('done', { recursive: true });
      await booth.files.rename('inbox/a.txt', 'done/a.txt');
      await booth.files.rm('tmp.txt');
    }
    const sql = await booth.sql();
    await sql.query('UPDATE counters SET n = n + 1 WHERE name = ?', ['payments']);
    await sql.query('INSERT INTO events (note) VALUES (?)', [`payment ${ref}`]);
    await booth.mcp.call('notify', 'notify_customer', { customer: 'C-1', message: `payment ${ref}` });
    await booth.shell.run(`echo shell-${ref} >> shell.log`, { timeoutMs: 20_000 });
    return `recorded ${ref}`;
  },
};

/** The world after payments `refs` each took effect exactly once. */
export function expectedWorld(refs: string[]): WorldState {
  return {
    ledger: `kind,ref\n${refs.map((r) => `payment,${r}\n`).join('')}`,
    files: ['done/', 'done/a.txt', 'inbox/', 'ledger.csv', 'shell.log'],
    shellLog: refs.map((r) => `shell-${r}\n`).join(''),
    counter: refs.length,
    events: refs.map((r) => `payment ${r}`),
    notifications: refs.map((r) => `payment ${r}`),
  };
}
