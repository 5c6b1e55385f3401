/** Every `jbx` command, declared in one place. */
import type { CommandSpec } from './command';
import { serverCommand } from './server';

export const commands: CommandSpec[] = [serverCommand];
