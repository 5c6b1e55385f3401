import { crossRealmError, JukeboxError } from '../../src/errors';

export class JaegerInstallError extends JukeboxError {
  constructor(target: string, problem: string, stderrTail: string[]) {
    super(
      'JAEGER_INSTALL_FAILED',
      `building ${target} failed: ${problem}\n${stderrTail.join('\n')}\n` +
        'Check that Go 1.24+ is on PATH and the Go module proxy is reachable, or point JUKEBOX_JAEGER at an ' +
        'existing jaeger binary (v2, OTLP receiver), then run `npx tsx scripts/jaeger.ts install` again.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('JaegerInstallError', JaegerInstallError);

export class JaegerStartError extends JukeboxError {
  constructor(problem: string, logTail: string[], logFile?: string) {
    super(
      'JAEGER_START_FAILED',
      `Jaeger did not start: ${problem}${logFile ? ` (log: ${logFile})` : ''}\n${logTail.join('\n')}\n` +
        'Free the ports it was given, or stop another Jaeger with `npx tsx scripts/jaeger.ts stop`.',
      { nonRetryable: false },
    );
  }
}
crossRealmError('JaegerStartError', JaegerStartError);

export class JaegerQueryError extends JukeboxError {
  constructor(url: string, problem: string, cause?: unknown) {
    super('JAEGER_QUERY_FAILED', `Jaeger query ${url} failed: ${problem}; is Jaeger up on that port?`, {
      cause,
    });
  }
}
crossRealmError('JaegerQueryError', JaegerQueryError);
