/**
 * The Compose Specification's own validator: the `cmd` of github.com/compose-spec/compose-go (the loader Docker
 * Compose itself uses), built from the Go module proxy at a pinned release into
 * `.jukebox/bin/compose-spec-<version>/`. It checks a compose file against the specification's JSON schema,
 * interpolates it and resolves its paths as `docker compose config` does, without a Docker daemon or client.
 * 14 modules from the proxy; a cold build (empty module and build caches) took 37 s of CPU here, 2.5 min of wall
 * time on a machine loaded to 16 on 2 cores. A binary already there is reused.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { withFileLock } from '../devserver/fileLock';
import { goInstall } from '../devserver/goInstall';
import { stderrLog } from '../devserver/temporalCli';

export const COMPOSE_SPEC_PACKAGE = 'github.com/compose-spec/compose-go/v2/cmd';
export const COMPOSE_SPEC_VERSION = 'v2.16.2';

/** The validator's path, building it first when it is not there. Usage: `BINARY [--format json] FILE`. */
export async function ensureComposeValidator(
  options: { projectRoot?: string; log?: (m: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const root = options.projectRoot ?? defaultProjectRoot();
  const log = options.log ?? stderrLog;
  const dir = path.join(jukeboxPaths(root).binDir, `compose-spec-${COMPOSE_SPEC_VERSION}`);
  // `go install` names the binary after the package's last element.
  const binary = path.join(dir, 'cmd');
  const ready = () =>
    fs.access(binary, constants.X_OK).then(
      () => true,
      () => false,
    );
  if (await ready()) return binary;
  await fs.mkdir(dir, { recursive: true });
  return withFileLock(path.join(dir, '.install.lock'), log, async () => {
    if (!(await ready()))
      await goInstall({
        pkg: COMPOSE_SPEC_PACKAGE,
        version: COMPOSE_SPEC_VERSION,
        binDir: dir,
        log,
        env: options.env ?? process.env,
        what: `the Compose Specification validator (compose-go ${COMPOSE_SPEC_VERSION})`,
        firstBuild: 'the first build downloads and compiles 14 modules (about 40 s of CPU)',
      });
    return binary;
  });
}
