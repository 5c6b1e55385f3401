/** Is a Temporal frontend answering at an address, and does it know a namespace? (`jbx server status`, tests.) */
import { Connection } from '@temporalio/client';

/** `up`: the frontend answers and knows the namespace; `no-namespace`: it answers without it. */
export type ServerState = 'down' | 'up' | 'no-namespace';

const PROBE_TIMEOUT_MS = 1_500;

/** One look at `address`: is a Temporal frontend there, and does it know `namespace`? */
export async function probeServer(address: string, namespace?: string): Promise<ServerState> {
  let connection: Connection | undefined;
  try {
    // Connection.connect itself calls GetSystemInfo, so reaching past it means Temporal, not just an open port.
    connection = await Connection.connect({ address, connectTimeout: PROBE_TIMEOUT_MS });
  } catch {
    return 'down';
  }
  try {
    if (namespace === undefined) return 'up';
    await connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () =>
      connection!.workflowService.describeNamespace({ namespace }),
    );
    return 'up';
  } catch (err) {
    return (err as { code?: number }).code === 5 /* NOT_FOUND */ ? 'no-namespace' : 'down';
  } finally {
    await connection.close().catch(() => {});
  }
}

/** True when a Temporal frontend answers on `address` (and knows `namespace`, when given). */
export async function isServerUp(address: string, namespace?: string): Promise<boolean> {
  return (await probeServer(address, namespace)) === 'up';
}
