/**
 * The settings Jukebox starts `temporal server start-dev` with. Each one removes a wait from every agent step
 * and costs a local dev server nothing it needs; docs/performance.md has the per-step breakdown behind them.
 */

/** `--dynamic-config-value KEY=VALUE` pairs (values are JSON, as the CLI reads them). */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, string | number | boolean>> = {
  // Eager activities: the server hands an activity the workflow task just scheduled back in the task's own
  // completion response when the same worker can run it, instead of through the matching service.
  'system.enableActivityEagerExecution': true,
  // Eager workflow start (on by default in this server version; set so an upgrade cannot silently drop it):
  // a run started through a worker's NativeConnection gets its first workflow task in the start response.
  'system.enableEagerWorkflowStart': true,
  // The history service reads new transfer tasks (each one dispatches the next workflow or activity task) at
  // most 20 times a second by default, so a step waited up to 50 ms for its dispatch. A single-host dev
  // server has no database to protect from those reads.
  'history.transferProcessorMaxPollRPS': 5000,
  // One partition per task queue: with the default four, a task can land on a partition whose poller is not
  // waiting and be forwarded to the root partition first. Partitions spread load over hosts a dev server does
  // not have.
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
};

/**
 * `--sqlite-pragma` pairs. Write-ahead log with synchronous=NORMAL: a commit appends to the log without an fsync
 * (checkpoints fsync). A killed server loses nothing (the log is in the OS page cache and replays on start, as
 * the server-crash test proves); only a power loss or kernel crash can lose the last transactions. The
 * default journal fsynced every transaction several times, a few milliseconds each, several times per step.
 */
export const DEV_SERVER_SQLITE_PRAGMAS: Readonly<Record<string, string>> = {
  journal_mode: 'wal',
  synchronous: 'normal',
};

export interface DevServerTuning {
  /** Merged over DEV_SERVER_DYNAMIC_CONFIG; `null` removes a key (the server's own default then applies). */
  dynamicConfig?: Record<string, string | number | boolean | null>;
  /** Merged over DEV_SERVER_SQLITE_PRAGMAS; `null` removes a pragma. */
  sqlitePragmas?: Record<string, string | null>;
}

/** The CLI arguments for the tuning: the defaults above with the caller's changes. */
export function devServerTuningArgs(tuning: DevServerTuning = {}): string[] {
  const args: string[] = [];
  for (const [key, value] of merged(DEV_SERVER_DYNAMIC_CONFIG, tuning.dynamicConfig))
    args.push(
      '--dynamic-config-value',
      `${key}=${typeof value === 'string' ? JSON.stringify(value) : value}`,
    );
  for (const [key, value] of merged(DEV_SERVER_SQLITE_PRAGMAS, tuning.sqlitePragmas))
    args.push('--sqlite-pragma', `${key}=${value}`);
  return args;
}

function merged<V>(base: Readonly<Record<string, V>>, changes: Record<string, V | null> | undefined) {
  const out = new Map<string, V>(Object.entries(base));
  for (const [k, v] of Object.entries(changes ?? {})) {
    if (v === null) out.delete(k);
    else out.set(k, v);
  }
  return out;
}
