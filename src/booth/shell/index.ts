/**
 * Shell staging for the Shadow Booth: `StagedShell` runs a command in a bubblewrap sandbox over a copy of a
 * StagedWorkspace's merged view and stages what it writes; the real workspace is untouched. Each command dies
 * with its worker, runs under limits (control groups or rlimits) and the booth's seccomp filter.
 */
export {
  ShellChangesRefusedError,
  ShellConfigError,
  ShellIsolationUnavailableError,
  ShellLimitError,
  ShellSpawnError,
  ShellTimeoutError,
} from './errors';
export { type Isolation, probeBwrap } from './isolation';
export {
  DEFAULT_SHELL_LIMITS,
  type LimitMechanism,
  type ShellEnforcement,
  type ShellLimits,
} from './limits';
export {
  buildSeccompFilter,
  SECCOMP_DENIED_SYSCALLS,
  SECCOMP_TABLE,
  type SeccompArch,
  seccompArch,
} from './seccomp';
export {
  ShellEnvironment,
  type ShellResult,
  type ShellRunOptions,
  type ShellStatus,
  StagedShell,
  type StagedShellOptions,
} from './stagedShell';
export type { ShellChange, Skipped } from './view';
