/**
 * The accounting quickstart's "notify customer" MCP server, built with the official SDK. It writes to an outbox
 * file, so tests can check the real target: `notify_customer` adds a notification, `retract_notification`
 * (its compensating call) removes it, `list_notifications` is read-only. A notification id or the booth's
 * idempotency key makes a repeated call a no-op. Run over stdio: `tsx examples/accounting/notifyServer.ts OUTBOX`.
 */
import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { atomicWriteJson } from '../../src/booth/durable';
import { IDEMPOTENCY_META_KEY } from '../../src/booth/mcp/escrow';

export interface Notification {
  id: string;
  customer: string;
  message: string;
}

export interface NotifyServerOptions {
  /** JSON file `{ notifications: [...] }`; created on the first notification. */
  outbox: string;
  /** Customers the server refuses to notify (isError), to exercise a failing commit. */
  refuseCustomers?: string[];
}

export function readOutbox(outbox: string): Notification[] {
  try {
    return (JSON.parse(readFileSync(outbox, 'utf8')) as { notifications: Notification[] }).notifications;
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return [];
    throw err;
  }
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

export function createNotifyServer(options: NotifyServerOptions): McpServer {
  const server = new McpServer({ name: 'jukebox-notify', version: '0.1.0' });
  // One request at a time: read-modify-write of the outbox must not interleave.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => {});
    return run;
  };

  server.registerTool(
    'notify_customer',
    {
      description: 'Send a customer a notification (e.g. that a refund was issued).',
      inputSchema: {
        customer: z.string().min(1),
        message: z.string().min(1),
        notificationId: z.string().optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    (args, extra) =>
      serial(async () => {
        if (options.refuseCustomers?.includes(args.customer))
          return {
            ...text(`customer ${args.customer} cannot be reached: no contact on file`),
            isError: true,
          };
        const key = extra._meta?.[IDEMPOTENCY_META_KEY];
        const id = args.notificationId ?? (typeof key === 'string' ? key : `n-${Date.now()}`);
        const all = readOutbox(options.outbox);
        if (!all.some((n) => n.id === id)) {
          all.push({ id, customer: args.customer, message: args.message });
          await atomicWriteJson(options.outbox, { notifications: all });
        }
        return text(`notified ${args.customer}: ${id}`);
      }),
  );

  server.registerTool(
    'retract_notification',
    {
      description: 'Withdraw a notification sent by notify_customer; retracting an unknown id does nothing.',
      inputSchema: { notificationId: z.string().min(1) },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    (args) =>
      serial(async () => {
        const all = readOutbox(options.outbox);
        const rest = all.filter((n) => n.id !== args.notificationId);
        if (rest.length !== all.length) await atomicWriteJson(options.outbox, { notifications: rest });
        return text(`retracted ${args.notificationId}`);
      }),
  );

  server.registerTool(
    'list_notifications',
    {
      description: 'List the notifications sent to a customer.',
      inputSchema: { customer: z.string().min(1) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args) =>
      text(JSON.stringify(readOutbox(options.outbox).filter((n) => n.customer === args.customer))),
  );
  return server;
}

if (require.main === module) {
  const outbox = process.argv[2];
  if (!outbox) {
    console.error('usage: tsx examples/accounting/notifyServer.ts OUTBOX_FILE [--refuse CUSTOMER,...]');
    process.exit(2);
  }
  const refuseAt = process.argv.indexOf('--refuse');
  const refuseCustomers = refuseAt > 0 ? (process.argv[refuseAt + 1] ?? '').split(',') : [];
  createNotifyServer({ outbox, refuseCustomers })
    .connect(new StdioServerTransport())
    .catch((err) => {
      console.error(`notify server failed: ${String(err)}`);
      process.exit(1);
    });
}
