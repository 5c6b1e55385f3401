import { DefaultLogger, Runtime } from '@temporalio/worker';

/**
 * Keeps the worker's INFO chatter (state changes, every retried activity) off the terminal of programs whose
 * output is for people (quickstart, benchmarks). Must run before the first worker or connection is made.
 */
export function installQuietRuntime(): void {
  Runtime.install({ logger: new DefaultLogger('WARN') });
}

/** For commands whose stdout is their result (`jbx replay --temporal --json`): the replayer's warnings go to stderr. */
export function installStderrRuntime(): void {
  Runtime.install({
    logger: new DefaultLogger('WARN', (e) => process.stderr.write(`temporal ${e.level}: ${e.message}\n`)),
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  });
}
