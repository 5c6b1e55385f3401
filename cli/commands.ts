/** Every `jbx` command, declared in one place. */
import type { CommandSpec } from './command';
import { diffCommand } from './diff';
import { exportCommand } from './export';
import { forkCommand } from './fork';
import { lsCommand } from './ls';
import { proxyCommand } from './proxy';
import { replayCommand } from './replay';
import { serverCommand } from './server';
import { showCommand } from './show';
import { verifyCommand } from './verify';

export const commands: CommandSpec[] = [
  serverCommand,
  lsCommand,
  showCommand,
  verifyCommand,
  proxyCommand,
  exportCommand,
  replayCommand,
  forkCommand,
  diffCommand,
];
