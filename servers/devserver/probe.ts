import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { TemporalServerTimeoutError } from './errors';

/** `up`: the frontend answers and knows the namespace; `no-namespace`: it answers without it. */
export type ServerState = 'down' | 'up' | 'no-namespace';

const PROBE_TIMEOUT_MS = 1_500;
const POLL_MS = 250;

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

export interface WaitForServerOptions {
  namespace?: string;
  /** Called between probes; throw from it to stop waiting (for example when the server process exited). */
  check?: () => void;
  /** Builds the timeout error; the default says how long it waited. */
  onTimeout?: (timeoutMs: number) => Error;
}

/** Polls until the frontend answers (and knows the namespace), or throws after `timeoutMs`. */
export async function waitForServer(address: string, timeoutMs: number, options: WaitForServerOptions = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    options.check?.();
    if ((await probeServer(address, options.namespace)) === 'up') return;
    options.check?.();
    if (Date.now() > deadline) {
      throw options.onTimeout?.(timeoutMs) ?? new TemporalServerTimeoutError(address, timeoutMs);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Registers `namespace` on a server that lacks it (a dev server someone else started without --namespace). */
export async function registerNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: PROBE_TIMEOUT_MS });
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 6 /* ALREADY_EXISTS */) throw err;
  } finally {
    await connection.close();
  }
}
