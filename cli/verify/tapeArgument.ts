/** Shared by `jbx show` and `jbx verify`: resolving the TAPE argument and naming what is wrong with a file. */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { tapeDirFromEnv } from '../../recorder/store';
import { type TapeError, TapeMagicError, TapeVersionError } from '../../tape';
import { ExitCode, ExitError, usageError } from '../exitError';

/** A path, or a tape's name (with or without `.jbx`) in the tape folder (`--dir`, else the store's). */
export function resolveTapePath(arg: string | undefined, dir: string | undefined, usage: string): string {
  if (!arg) throw usageError(`missing TAPE argument\nusage: ${usage}`);
  const folder = dir ? path.resolve(dir) : tapeDirFromEnv();
  const candidates = [path.resolve(arg), path.join(folder, arg), path.join(folder, `${arg}.jbx`)];
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw usageError(`no such file: ${arg} (also looked in ${folder})`);
  if (statSync(found).isDirectory())
    throw usageError(`${found} is a directory, not a tape; jbx ls --dir ${arg} lists it`);
  return found;
}

/** Turns a header-level tape error into the CLI's "tape damaged" exit with a message naming the file. */
export function headerFailure(file: string, err: TapeError): ExitError {
  if (err instanceof TapeMagicError)
    return new ExitError(ExitCode.tapeDamaged, `${file} is not a Jukebox tape (${err.message})`);
  if (err instanceof TapeVersionError)
    return new ExitError(
      ExitCode.tapeDamaged,
      `${file} is a tape of format version ${err.version}, which this jbx cannot read (it reads version 1); upgrade jbx`,
    );
  return new ExitError(ExitCode.tapeDamaged, `${file}: damaged header: ${err.message}`);
}
