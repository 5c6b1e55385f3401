import { GoToolchainMissingError, TemporalCliBuildError, TemporalCliDownloadError } from './errors';
import { runCommand } from './exec';

export interface GoInstallOptions {
  /** Package path, for example `github.com/temporalio/cli/cmd/temporal`. */
  pkg: string;
  /** Module version with its `v`, for example `v1.5.1`. */
  version: string;
  binDir: string;
  ldflags?: string;
  log: (message: string) => void;
  env?: NodeJS.ProcessEnv;
  /** What is being built, for progress lines (default `the Temporal CLI`). */
  what?: string;
  /** What a first build costs, for the opening progress line (default: the Temporal CLI's ~300 modules). */
  firstBuild?: string;
}

// What go prints when it cannot fetch a module, as opposed to failing to compile one.
const DOWNLOAD_FAILURE =
  /proxy\.golang\.org|GOPROXY|dial tcp|no such host|i\/o timeout|connection refused|TLS handshake|x509|40[34] |410 Gone|unknown revision|invalid version|unrecognized import path|checksum mismatch/i;
const PROGRESS_EVERY_MS = 20_000;

/** `go install pkg@version` into binDir, with progress lines, since a first build takes minutes. */
export async function goInstall(options: GoInstallOptions): Promise<void> {
  const env = { ...(options.env ?? process.env), GOBIN: options.binDir };
  const goVersion = await runCommand('go', ['version'], { env, timeoutMs: 30_000 });
  if (goVersion?.code !== 0) throw new GoToolchainMissingError(goVersion?.stderr);

  const target = `${options.pkg}@${options.version}`;
  const what = options.what ?? 'the Temporal CLI';
  const args = ['install', ...(options.ldflags ? ['-ldflags', options.ldflags] : []), target];
  options.log(`installing ${target} with ${goVersion.stdout.trim()} into ${options.binDir}`);
  options.log(
    options.firstBuild ?? 'the first build downloads and compiles ~300 modules and takes a few minutes',
  );
  const started = Date.now();
  let downloaded = 0;
  const problems: string[] = [];
  const ticker = setInterval(() => {
    const s = Math.round((Date.now() - started) / 1000);
    options.log(`still building ${what} (${s}s, ${downloaded} modules downloaded)`);
  }, PROGRESS_EVERY_MS);
  let result: Awaited<ReturnType<typeof runCommand>>;
  try {
    result = await runCommand('go', args, {
      env,
      onStderrLine(line) {
        if (line.startsWith('go: downloading ')) downloaded++;
        else if (line.trim()) problems.push(line);
      },
    });
  } finally {
    clearInterval(ticker);
  }
  if (!result) throw new GoToolchainMissingError();
  if (result.code === 0) {
    options.log(`built ${what} in ${Math.round((Date.now() - started) / 1000)}s`);
    return;
  }
  const tail = problems.slice(-20);
  if (tail.some((l) => DOWNLOAD_FAILURE.test(l))) throw new TemporalCliDownloadError(target, tail);
  throw new TemporalCliBuildError(target, result.code, tail);
}
