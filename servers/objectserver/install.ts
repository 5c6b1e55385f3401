/**
 * The Versity S3 Gateway (versitygw, Apache-2.0), a real S3 server with a POSIX-folder backend, built from the
 * Go module proxy at a pinned release into `.jukebox/bin/versitygw-<version>/`. Chosen over SeaweedFS and
 * MinIO for its build: ~80 modules, about 4 minutes cold on a loaded 2-core machine where SeaweedFS's ~500
 * took 22. Its conditional PUT (`If-None-Match: *`) is checked under a per-object publish lock, which the
 * object tape store relies on. A binary already there is reused.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { withFileLock } from '../devserver/fileLock';
import { goInstall } from '../devserver/goInstall';
import { stderrLog } from '../devserver/temporalCli';
import { ObjectServerError } from './errors';

export const VERSITYGW_PACKAGE = 'github.com/versity/versitygw/cmd/versitygw';
export const VERSITYGW_VERSION = 'v1.8.0';

export async function ensureVersitygw(
  options: { projectRoot?: string; log?: (m: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const root = options.projectRoot ?? defaultProjectRoot();
  const log = options.log ?? stderrLog;
  const dir = path.join(jukeboxPaths(root).binDir, `versitygw-${VERSITYGW_VERSION}`);
  const binary = path.join(dir, 'versitygw');
  if (await isExecutable(binary)) return binary;
  await fs.mkdir(dir, { recursive: true });
  return withFileLock(path.join(dir, '.install.lock'), log, async () => {
    if (await isExecutable(binary)) return binary;
    await goInstall({
      pkg: VERSITYGW_PACKAGE,
      version: VERSITYGW_VERSION,
      binDir: dir,
      log,
      env: options.env ?? process.env,
      what: `the S3 test server (versitygw ${VERSITYGW_VERSION})`,
    });
    if (!(await isExecutable(binary)))
      throw new ObjectServerError(`go install finished but ${binary} is not there`);
    return binary;
  });
}

async function isExecutable(file: string): Promise<boolean> {
  return fs.access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}
