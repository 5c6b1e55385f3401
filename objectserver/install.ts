/**
 * SeaweedFS (Apache-2.0), a real S3-compatible object store, built from the Go module proxy at the release
 * pinned in `objectserver/build/go.mod` into `.jukebox/bin/seaweedfs-<version>/weed`. `go install pkg@version`
 * refuses SeaweedFS (its go.mod has a replace directive), so the build runs in that small module, whose
 * go.sum pins every dependency. A binary already there is reused.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { runCommand } from '../devserver/exec';
import { withFileLock } from '../devserver/fileLock';
import { stderrLog } from '../devserver/temporalCli';
import { ObjectServerError } from './errors';

export const SEAWEEDFS_MODULE = 'github.com/seaweedfs/seaweedfs';
/** Keep in step with objectserver/build/go.mod (a test checks they agree). */
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';

const PROGRESS_EVERY_MS = 30_000;

export async function ensureSeaweedfs(
  options: { projectRoot?: string; log?: (m: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const root = options.projectRoot ?? defaultProjectRoot();
  const log = options.log ?? stderrLog;
  const dir = path.join(jukeboxPaths(root).binDir, `seaweedfs-${SEAWEEDFS_VERSION}`);
  const binary = path.join(dir, 'weed');
  if (await isExecutable(binary)) return binary;
  await fs.mkdir(dir, { recursive: true });
  return withFileLock(path.join(dir, '.install.lock'), log, async () => {
    if (await isExecutable(binary)) return binary;
    const started = Date.now();
    log(
      `building SeaweedFS ${SEAWEEDFS_VERSION} (the S3 test server) into ${dir}; a first build takes minutes`,
    );
    const ticker = setInterval(
      () => log(`still building SeaweedFS (${Math.round((Date.now() - started) / 1000)}s)`),
      PROGRESS_EVERY_MS,
    );
    let out: Awaited<ReturnType<typeof runCommand>>;
    try {
      out = await runCommand(
        'go',
        ['build', '-trimpath', '-o', `${binary}.tmp`, `${SEAWEEDFS_MODULE}/weed`],
        { env: { ...(options.env ?? process.env) }, cwd: path.join(root, 'objectserver', 'build') },
      );
    } finally {
      clearInterval(ticker);
    }
    if (!out)
      throw new ObjectServerError(
        'the Go toolchain is not installed (no `go` on PATH); install Go 1.26 or newer',
      );
    if (out.code !== 0)
      throw new ObjectServerError(
        `go build of SeaweedFS failed: ${out.stderr.trim().split('\n').slice(-10).join(' | ')}`,
      );
    await fs.rename(`${binary}.tmp`, binary);
    log(`built SeaweedFS in ${Math.round((Date.now() - started) / 1000)}s`);
    return binary;
  });
}

async function isExecutable(file: string): Promise<boolean> {
  return fs.access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}
