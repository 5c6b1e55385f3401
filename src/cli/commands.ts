/**
 * Every `jbx` command, declared in one place. A command's module is loaded only when that command runs (help
 * loads them all), so a quick command such as `jbx ls` does not pay for the Temporal worker, OpenTelemetry
 * and model clients that other commands import.
 */
import type { CommandSpec } from './command';

export interface CommandEntry {
  name: string;
  load(): CommandSpec;
}

export const commands: CommandEntry[] = [
  { name: 'server', load: () => (require('./server') as typeof import('./server')).serverCommand },
  { name: 'ls', load: () => (require('./ls') as typeof import('./ls')).lsCommand },
  { name: 'show', load: () => (require('./show') as typeof import('./show')).showCommand },
  { name: 'verify', load: () => (require('./verify') as typeof import('./verify')).verifyCommand },
  { name: 'proxy', load: () => (require('./proxy') as typeof import('./proxy')).proxyCommand },
  { name: 'export', load: () => (require('./export') as typeof import('./export')).exportCommand },
  { name: 'replay', load: () => (require('./replay') as typeof import('./replay')).replayCommand },
  { name: 'fork', load: () => (require('./fork') as typeof import('./fork')).forkCommand },
  { name: 'diff', load: () => (require('./diff') as typeof import('./diff')).diffCommand },
  { name: 'view', load: () => (require('./view') as typeof import('./view')).viewCommand },
  { name: 'bundle', load: () => (require('./bundle') as typeof import('./bundle')).bundleCommand },
];
