/**
 * The pinned Jaeger (v2: an OpenTelemetry Collector distribution with an OTLP receiver, in-memory storage and
 * the query API) built from source into `.jukebox/bin`, like the Temporal CLI. `go install pkg@version` refuses
 * this module because its go.mod has a replace directive, so it is built as a tool of a small wrapper module
 * that repeats that directive.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultProjectRoot, jukeboxPaths } from '../devserver/config';
import { GoToolchainMissingError } from '../devserver/errors';
import { runCommand } from '../devserver/exec';
import { withFileLock } from '../devserver/fileLock';
import { JaegerInstallError } from './errors';

export const JAEGER_VERSION = 'v1.76.0';
export const JAEGER_MODULE = 'github.com/jaegertracing/jaeger';
export const JAEGER_PACKAGE = `${JAEGER_MODULE}/cmd/jaeger`;
// The replace directive of jaeger v1.76.0's go.mod, which only a main module can apply.
const WRAPPER_GO_MOD = `module jukebox.local/jaeger-build

go 1.24

replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
`;
const PROGRESS_EVERY_MS = 20_000;

export interface EnsureJaegerOptions {
  projectRoot?: string;
  log?: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}

const stderrLog = (message: string) => process.stderr.write(`jukebox: ${message}\n`);

/** `JUKEBOX_JAEGER` when set, else the pinned build in `<root>/.jukebox/bin/jaeger`, built when missing. */
export async function ensureJaeger(options: EnsureJaegerOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const override = env.JUKEBOX_JAEGER?.trim();
  if (override) {
    await assertExecutable(override, 'JUKEBOX_JAEGER');
    return override;
  }
  const root = options.projectRoot ?? defaultProjectRoot();
  const { binDir } = jukeboxPaths(root);
  const binary = path.join(binDir, 'jaeger');
  if ((await jaegerVersion(binary, env)) === JAEGER_VERSION) return binary;
  await fs.mkdir(binDir, { recursive: true });
  return withFileLock(path.join(binDir, '.jaeger-install.lock'), log, async () => {
    if ((await jaegerVersion(binary, env)) === JAEGER_VERSION) return binary;
    await buildJaeger(path.join(root, '.jukebox', 'build', `jaeger-${JAEGER_VERSION}`), binDir, env, log);
    await assertExecutable(binary, `the build into ${binDir}`);
    return binary;
  });
}

/** The module version recorded in the binary's build info, or undefined when missing. */
export async function jaegerVersion(binary: string, env: NodeJS.ProcessEnv = process.env) {
  const info = await runCommand('go', ['version', '-m', binary], { env, timeoutMs: 30_000 }).catch(
    () => undefined,
  );
  if (info?.code !== 0) return undefined;
  const path = /^\s*path\s+(\S+)/m.exec(info.stdout)?.[1];
  if (path !== JAEGER_PACKAGE) return undefined;
  return /^\s*mod\s+github\.com\/jaegertracing\/jaeger\s+(\S+)/m.exec(info.stdout)?.[1];
}

async function buildJaeger(
  dir: string,
  binDir: string,
  baseEnv: NodeJS.ProcessEnv,
  log: (m: string) => void,
) {
  const env = { ...baseEnv, GOBIN: binDir, GOFLAGS: '-mod=mod' };
  const go = await runCommand('go', ['version'], { env, timeoutMs: 30_000 });
  if (go?.code !== 0) throw new GoToolchainMissingError(go?.stderr);
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'go.mod'), WRAPPER_GO_MOD);
  await fs.rm(path.join(dir, 'go.sum'), { force: true });
  const target = `${JAEGER_PACKAGE}@${JAEGER_VERSION}`;
  log(`building ${target} with ${go.stdout.trim()} into ${binDir} (the first build takes several minutes)`);
  const started = Date.now();
  const ticker = setInterval(
    () => log(`still building Jaeger (${Math.round((Date.now() - started) / 1000)}s)`),
    PROGRESS_EVERY_MS,
  );
  try {
    for (const args of [
      ['get', '-tool', target],
      ['install', '-ldflags', `-X ${JAEGER_MODULE}/internal/version.latestVersion=${JAEGER_VERSION}`, 'tool'],
    ]) {
      const problems: string[] = [];
      // `go -C dir`: run in the wrapper module without changing this process's working directory.
      const r = await runCommand('go', ['-C', dir, ...args], {
        env,
        onStderrLine: (line) => {
          if (line.trim() && !/^go: (downloading|added|upgraded) /.test(line)) problems.push(line);
        },
      });
      if (!r) throw new GoToolchainMissingError();
      if (r.code !== 0)
        throw new JaegerInstallError(target, `go ${args.join(' ')} exited ${r.code}`, problems.slice(-20));
    }
  } finally {
    clearInterval(ticker);
  }
  log(`built Jaeger in ${Math.round((Date.now() - started) / 1000)}s`);
}

async function assertExecutable(file: string, source: string): Promise<void> {
  try {
    await fs.access(file, constants.X_OK);
  } catch (err) {
    throw new JaegerInstallError(file, `${source} names no executable file (${String(err)})`, []);
  }
}
