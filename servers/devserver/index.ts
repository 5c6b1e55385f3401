/** The pinned Temporal CLI (installed with go install) and a local dev server to run Jukebox against. */
export {
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  DEFAULT_TEMPORAL_UI_PORT,
  jukeboxPaths,
  splitAddress,
  type TemporalConfig,
  temporalConfigFromEnv,
} from './config';
export {
  type DevServerHandle,
  type StartDevServerOptions,
  type StopDevServerOptions,
  type StopResult,
  startDevServer,
  stopDevServer,
} from './devServer';
export {
  DevServerPortTakenError,
  DevServerStartError,
  GoToolchainMissingError,
  InstallLockTimeoutError,
  TemporalCliBuildError,
  TemporalCliDownloadError,
  TemporalCliNotFoundError,
  TemporalConfigInvalidError,
  TemporalServerTimeoutError,
} from './errors';
export { freePort, isPortFree } from './ports';
export { isServerUp, probeServer, type ServerState, waitForServer } from './probe';
export {
  DEV_SERVER_DYNAMIC_CONFIG,
  DEV_SERVER_SQLITE_PRAGMAS,
  type DevServerTuning,
  devServerTuningArgs,
} from './serverTuning';
export { serverStateFiles } from './stateFiles';
export {
  type EnsureTemporalCliOptions,
  ensureTemporalCli,
  TEMPORAL_CLI_PACKAGE,
  TEMPORAL_CLI_VERSION,
  temporalCliVersion,
} from './temporalCli';
