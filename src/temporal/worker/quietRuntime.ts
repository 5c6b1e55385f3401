import { DefaultLogger, Runtime } from '@temporalio/worker';

/**
 * Keeps the worker's INFO chatter (state changes, every retried activity) off the terminal of programs whose
 * output is for people (quickstart, benchmarks). Must run before the first worker or connection is made.
 */
export function installQuietRuntime(): void {
  Runtime.install({ logger: new DefaultLogger('WARN') });
}
