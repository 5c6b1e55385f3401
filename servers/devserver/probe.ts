import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { probeServer } from '../../src/temporal/client/probe';
import { TemporalServerTimeoutError } from './errors';

export { isServerUp, probeServer, type ServerState } from '../../src/temporal/client/probe';

const PROBE_TIMEOUT_MS = 1_500;
const POLL_MS = 250;

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
