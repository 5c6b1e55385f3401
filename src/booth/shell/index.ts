/**
 * Shell staging for the Shadow Booth: `StagedShell` runs a command in a bubblewrap sandbox over a copy of a
 * StagedWorkspace's merged view and stages what it writes; the real workspace is untouched.
 */
export {
  ShellChangesRefusedError,
  ShellConfigError,
  ShellIsolationUnavailableError,
  ShellSpawnError,
  ShellTimeoutError,
} from './errors';
export { type Isolation, probeBwrap } from './isolation';
export { type ShellResult, type ShellRunOptions, StagedShell, type StagedShellOptions } from './stagedShell';
export type { ShellChange, Skipped } from './view';
