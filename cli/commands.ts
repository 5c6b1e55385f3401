/** Every `jbx` command, declared in one place. */
import type { CommandSpec } from './command';
import { lsCommand } from './ls';
import { serverCommand } from './server';
import { showCommand } from './show';
import { verifyCommand } from './verify';

export const commands: CommandSpec[] = [serverCommand, lsCommand, showCommand, verifyCommand];
