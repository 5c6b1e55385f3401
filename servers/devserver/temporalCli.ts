import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultProjectRoot, jukeboxPaths } from './config';
import { TemporalCliNotFoundError } from './errors';
import { runCommand } from './exec';
import { withFileLock } from './fileLock';
import { goInstall } from './goInstall';

/** The CLI release Jukebox is tested against; its dev server embeds Temporal Server 1.29 and the Web UI. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_PACKAGE = 'github.com/temporalio/cli/cmd/temporal';
// `go install` leaves the CLI's version variable at 0.0.0-DEV; stamping it makes `temporal --version` honest.
const VERSION_LDFLAGS = `-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION.slice(1)}`;

export interface EnsureTemporalCliOptions {
  projectRoot?: string;
  log?: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}

export const stderrLog = (message: string) => process.stderr.write(`jukebox: ${message}\n`);

/**
 * Path of a Temporal CLI to run: `JUKEBOX_TEMPORAL_CLI` when set, else the pinned version in
 * `<root>/.jukebox/bin`, built with `go install` when missing or another version.
 */
export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const override = env.JUKEBOX_TEMPORAL_CLI?.trim();
  if (override) {
    await assertExecutable(override, 'JUKEBOX_TEMPORAL_CLI');
    return override;
  }
  const { binDir } = jukeboxPaths(options.projectRoot ?? defaultProjectRoot());
  const binary = path.join(binDir, process.platform === 'win32' ? 'temporal.exe' : 'temporal');
  if (await isPinnedVersion(binary, env)) return binary;

  await fs.mkdir(binDir, { recursive: true });
  // Two processes (a test run and a script) must not build into the same GOBIN at once.
  return withFileLock(path.join(binDir, '.temporal-install.lock'), log, async () => {
    if (await isPinnedVersion(binary, env)) return binary;
    await goInstall({
      pkg: TEMPORAL_CLI_PACKAGE,
      version: TEMPORAL_CLI_VERSION,
      binDir,
      ldflags: VERSION_LDFLAGS,
      log,
      env,
    });
    await assertExecutable(binary, `go install into ${binDir}`);
    return binary;
  });
}

/** The CLI's version as `v1.2.3`, or undefined when the binary is missing or does not say. */
export async function temporalCliVersion(binary: string, env: NodeJS.ProcessEnv = process.env) {
  const out = await runCommand(binary, ['--version'], { env, timeoutMs: 30_000 }).catch(() => undefined);
  const reported = out?.code === 0 ? /temporal version (\S+)/.exec(out.stdout)?.[1] : undefined;
  if (!reported) return undefined;
  if (reported !== '0.0.0-DEV') return reported.startsWith('v') ? reported : `v${reported}`;
  // A plain `go install` build: the module version is still recorded in the binary's build info.
  const info = await runCommand('go', ['version', '-m', binary], { env, timeoutMs: 30_000 }).catch(
    () => undefined,
  );
  return /^\s*mod\s+github\.com\/temporalio\/cli\s+(\S+)/m.exec(info?.stdout ?? '')?.[1];
}

async function isPinnedVersion(binary: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  return (await temporalCliVersion(binary, env)) === TEMPORAL_CLI_VERSION;
}

async function assertExecutable(file: string, source: string): Promise<void> {
  try {
    await fs.access(file, constants.X_OK);
    if (!(await fs.stat(file)).isFile()) throw new Error('not a file');
  } catch (err) {
    throw new TemporalCliNotFoundError(file, source, err);
  }
}
