/**
 * The accounting agent's tools (activity code). They touch the ledger, the accounts database and the notify
 * server only through the run's Shadow Booth, so everything they write is staged until the run commits.
 */

import { requireString, ToolArgumentsError, type ToolDefinition } from '../../src/agent/tools/toolRegistry';
import { requireBooth } from '../../src/booth/shadowBooth';
import { accountingToolSpecs } from './agent';

export const LEDGER_FILE = 'ledger.csv';
/** The booth's name for the notify MCP server (examples/accounting/notifyServer.ts). */
export const NOTIFY_SERVER = 'notify';

function spec(name: string) {
  const found = accountingToolSpecs.find((s) => s.name === name);
  if (!found) throw new Error(`accountingToolSpecs lacks ${name}`);
  return found;
}

const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`;

export const getAccountTool: ToolDefinition = {
  spec: spec('get_account'),
  async run(args, invocation) {
    const customer = requireString('get_account', args, 'customer');
    const sql = await requireBooth(invocation, 'get_account').sql();
    const { rows } = await sql.query('SELECT id, name, email, balance_cents FROM accounts WHERE id = ?', [
      customer,
    ]);
    if (rows.length === 0)
      throw new ToolArgumentsError('get_account', `no account ${customer}; check the id`);
    const a = rows[0] as { id: string; name: string; email: string; balance_cents: number };
    return `ACCOUNT ${a.id} ${a.name} <${a.email}> balance_cents=${a.balance_cents} (${dollars(a.balance_cents)})`;
  },
};

export const readLedgerTool: ToolDefinition = {
  spec: spec('read_ledger'),
  async run(_args, invocation) {
    const ledger = await requireBooth(invocation, 'read_ledger').files.readFile(LEDGER_FILE, 'utf8');
    return `LEDGER\n${ledger}`;
  },
};

export const stageRefundTool: ToolDefinition = {
  spec: spec('stage_refund'),
  async run(args, invocation) {
    const customer = requireString('stage_refund', args, 'customer');
    const memo = requireString('stage_refund', args, 'memo').replace(/[\r\n,]/g, ' ');
    const cents = args.amount_cents;
    if (typeof cents !== 'number' || !Number.isInteger(cents) || cents <= 0)
      throw new ToolArgumentsError(
        'stage_refund',
        `amount_cents must be a positive integer, got ${JSON.stringify(cents)}`,
      );
    const booth = requireBooth(invocation, 'stage_refund');
    const sql = await booth.sql();
    const updated = await sql.query('UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?', [
      cents,
      customer,
    ]);
    if (updated.rowsAffected !== 1)
      throw new ToolArgumentsError('stage_refund', `no account ${customer}; nothing was staged for it`);
    const { rows } = await sql.query('SELECT email FROM accounts WHERE id = ?', [customer]);
    await booth.files.appendFile(LEDGER_FILE, `2026-12-02,${customer},refund,${cents},${memo}\n`);
    // A stable id per run and customer: the notification and its retraction name the same message.
    const notificationId = `refund-${booth.runKey}-${customer}`;
    await booth.mcp.call(
      NOTIFY_SERVER,
      'notify_customer',
      {
        customer,
        message: `A refund of ${dollars(cents)} was issued to ${String(rows[0]?.email)}: ${memo}`,
        notificationId,
      },
      { compensate: { tool: 'retract_notification', arguments: { notificationId } } },
    );
    return `STAGED refund of ${dollars(cents)} to ${customer}: ledger line, balance update, notification ${notificationId} (all held until commit)`;
  },
};

export const accountingTools: ToolDefinition[] = [getAccountTool, readLedgerTool, stageRefundTool];
