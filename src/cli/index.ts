/** The `jbx` command line: commands declared in commands.ts, one folder per command. */
export { type CommandEntry, commands } from './commands';
export { ExitCode, ExitError } from './exitError';
export { main } from './main';
