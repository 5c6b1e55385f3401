import { existsSync, statSync } from 'node:fs';
import { isGlob } from '../../timetravel/replay/tapeFiles';

/**
 * A folder, a glob, several arguments or a JUnit report: the suite, not the one-tape audit. Apart from the
 * suite itself (./suite.ts), so that replaying one tape does not load the suite's worker threads and bundles.
 */
export function isSuiteArgument(positionals: string[], flags: Record<string, unknown>): boolean {
  if (positionals.length > 1 || flags.junit !== undefined || flags.jobs !== undefined) return true;
  const arg = positionals[0];
  if (arg === undefined) return false;
  if (isGlob(arg)) return true;
  return existsSync(arg) && statSync(arg).isDirectory();
}
