/** Shared by `jbx show` and `jbx verify`: resolving the TAPE argument and naming what is wrong with a file. */
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TapeSegmentsError, TapeStoreConfigError } from '../../recorder/errors';
import { tapeDirFromEnv } from '../../recorder/store';
import { downloadObjectTape, isObjectTapeUrl } from '../../recorder/storeFromEnv';
import { type TapeError, TapeMagicError, TapeVersionError } from '../../recorder/tape';
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

/**
 * As resolveTapePath, and also a tape in an object store named by its URL (`s3://bucket/prefix/NAME.jbx`):
 * its segments are fetched into one local `.jbx` (a temporary folder), which is what the command then reads.
 */
export async function resolveStoredTape(
  arg: string | undefined,
  dir: string | undefined,
  usage: string,
): Promise<string> {
  if (!arg || !isObjectTapeUrl(arg)) return resolveTapePath(arg, dir, usage);
  const file = path.join(
    mkdtempSync(path.join(os.tmpdir(), 'jbx-s3-')),
    path.basename(arg.replace(/\/$/, '')),
  );
  try {
    const got = await downloadObjectTape(arg, file);
    process.stderr.write(`fetched ${arg}: ${got.segments} segments, ${got.bytes} bytes, into ${file}\n`);
  } catch (err) {
    // Segments that do not line up are a damaged tape; a store that does not answer is a failure.
    const code =
      err instanceof TapeSegmentsError
        ? ExitCode.tapeDamaged
        : err instanceof TapeStoreConfigError
          ? ExitCode.usage
          : ExitCode.failed;
    throw new ExitError(code, `cannot fetch ${arg}: ${(err as Error).message}`);
  }
  return file;
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
