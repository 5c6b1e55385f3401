import { spawnSync } from 'node:child_process';
import path from 'node:path';

const BIN = path.join(__dirname, '../../src/cli/bin.js');

/** Runs the real `jbx` in a child process, as a user would. */
export function jbx(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
