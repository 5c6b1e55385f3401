/**
 * The accounting quickstart's world: a workspace with the ledger, a SQLite accounts database, the notify
 * server's outbox, and the booth configuration over them. Fingerprints prove what a run changed (or not).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import knexFactory from 'knex';
import type { ShadowBoothConfig } from '../../src/booth/shadowBooth';
import { gates } from './gates';
import { NOTIFY_SERVER } from './tools';

const HERE = __dirname;
const ROOT = path.resolve(HERE, '../..');
export const ACCOUNTING_SCRIPT = path.join(HERE, 'script.yaml');

export interface AccountingDemo {
  dir: string;
  workspace: string;
  database: string;
  outbox: string;
  staging: string;
}

/** A fresh copy of the seed data under `dir` (replacing what a previous run left there). */
export async function prepareAccountingDemo(dir: string): Promise<AccountingDemo> {
  const demo: AccountingDemo = {
    dir,
    workspace: path.join(dir, 'workspace'),
    database: path.join(dir, 'accounts.sqlite'),
    outbox: path.join(dir, 'outbox.json'),
    staging: path.join(dir, 'staging'),
  };
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(demo.workspace, { recursive: true });
  await fs.copyFile(path.join(HERE, 'seed/ledger.csv'), path.join(demo.workspace, 'ledger.csv'));
  await fs.writeFile(demo.outbox, `${JSON.stringify({ notifications: [] }, null, 1)}\n`);
  const db = knexFactory({
    client: 'sqlite3',
    connection: { filename: demo.database },
    useNullAsDefault: true,
  });
  try {
    const seed = await fs.readFile(path.join(HERE, 'seed/accounts.sql'), 'utf8');
    for (const statement of seed
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean))
      await db.raw(statement);
  } finally {
    await db.destroy();
  }
  return demo;
}

/**
 * The booth over the demo: the notify server runs as a real MCP server over stdio (pass `inProcess` to link it
 * in this process instead), the refund gate is registered by name.
 */
export function accountingBooth(
  demo: AccountingDemo,
  options: { refuseCustomers?: string[]; faultPoint?: ShadowBoothConfig['faultPoint'] } = {},
): ShadowBoothConfig {
  const args = ['--import', 'tsx', path.join(HERE, 'notifyServer.ts'), demo.outbox];
  if (options.refuseCustomers?.length) args.push('--refuse', options.refuseCustomers.join(','));
  return {
    workspaceRoot: demo.workspace,
    stagingRoot: demo.staging,
    sqlite: demo.database,
    mcpServers: [
      { name: NOTIFY_SERVER, transport: { kind: 'stdio', command: process.execPath, args, cwd: ROOT } },
    ],
    gates,
    ...(options.faultPoint ? { faultPoint: options.faultPoint } : {}),
  };
}

async function hashTree(dir: string, h = createHash('sha256'), rel = ''): Promise<string> {
  const entries = (await fs.readdir(path.join(dir, rel), { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  );
  for (const e of entries) {
    const p = path.join(rel, e.name);
    const st = await fs.lstat(path.join(dir, p));
    h.update(`${p}\0${e.isDirectory() ? 'd' : 'f'}\0${st.mode & 0o7777}\0`);
    if (e.isDirectory()) await hashTree(dir, h, p);
    else h.update(await fs.readFile(path.join(dir, p)));
  }
  return rel === '' ? h.digest('hex') : '';
}

async function hashFile(file: string): Promise<string> {
  return createHash('sha256')
    .update(await fs.readFile(file))
    .digest('hex');
}

export interface DemoFingerprint {
  workspace: string;
  database: string;
  outbox: string;
}

/** sha256 of the workspace tree (names, modes, bytes), the database file and the outbox. */
export async function fingerprint(demo: AccountingDemo): Promise<DemoFingerprint> {
  return {
    workspace: await hashTree(demo.workspace),
    database: await hashFile(demo.database),
    outbox: await hashFile(demo.outbox),
  };
}

export async function readBalance(demo: AccountingDemo, customer: string): Promise<number> {
  const db = knexFactory({
    client: 'sqlite3',
    connection: { filename: demo.database },
    useNullAsDefault: true,
  });
  try {
    const row = await db('accounts').where({ id: customer }).first('balance_cents');
    return Number(row?.balance_cents);
  } finally {
    await db.destroy();
  }
}

/**
 * sha256 of every user table's schema and rows, ordered. A compensated SQL commit leaves its record in the
 * booth's bookkeeping table (`_jukebox_commits`, the idempotency marker), so the file bytes differ while the
 * data is back as it was; this digest compares the data.
 */
export async function tablesDigest(demo: AccountingDemo): Promise<string> {
  const db = knexFactory({
    client: 'sqlite3',
    connection: { filename: demo.database },
    useNullAsDefault: true,
  });
  try {
    const h = createHash('sha256');
    const tables = (await db.raw(
      "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_jukebox\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )) as { name: string; sql: string }[];
    for (const t of tables) {
      h.update(`${t.name}\0${t.sql}\0`);
      h.update(JSON.stringify(await db.raw(`SELECT * FROM "${t.name.replace(/"/g, '""')}" ORDER BY 1`)));
    }
    return h.digest('hex');
  } finally {
    await db.destroy();
  }
}
