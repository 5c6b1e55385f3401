import path from 'node:path';
import { readTape, TapeError } from '../../recorder/tape';
import { exportTape, OtlpEndpointError, postOtlp, TelemetryExportError } from '../../telemetry';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { headerFailure, resolveTapePath } from '../verify/tapeArgument';

const USAGE =
  'jbx export TAPE (--otlp URL | --format otlp-json) [--signal traces|metrics|all] [--capture-content] [--service NAME] [--dir D] [--json]';

const SIGNALS = ['traces', 'metrics', 'all'] as const;
type SignalChoice = (typeof SIGNALS)[number];

function signalOf(value: unknown): SignalChoice {
  if (value === undefined) return 'traces';
  if (!SIGNALS.includes(value as SignalChoice))
    throw usageError(`--signal is "${String(value)}"; use traces, metrics or all\nusage: ${USAGE}`);
  return value as SignalChoice;
}

export const exportCommand: CommandSpec = {
  name: 'export',
  usage: USAGE,
  options: {
    otlp: { type: 'string' },
    format: { type: 'string' },
    signal: { type: 'string' },
    'capture-content': { type: 'boolean' },
    service: { type: 'string' },
    dir: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    const otlp = flags.otlp as string | undefined;
    const format = flags.format as string | undefined;
    if (otlp === undefined && format === undefined)
      throw usageError(`say where to export: --otlp URL or --format otlp-json\nusage: ${USAGE}`);
    if (otlp !== undefined && format !== undefined)
      throw usageError(`--otlp and --format exclude each other: post, or print\nusage: ${USAGE}`);
    if (format !== undefined && format !== 'otlp-json')
      throw usageError(`--format is "${format}"; the one format is otlp-json\nusage: ${USAGE}`);
    const signal = signalOf(flags.signal);
    if (format !== undefined && signal === 'all')
      throw usageError('--format otlp-json prints one request: --signal traces or --signal metrics');
    const file = resolveTapePath(positionals[0], flags.dir as string | undefined, USAGE);

    let tape: ReturnType<typeof readTape>;
    try {
      tape = readTape(file, { recover: true });
    } catch (err) {
      if (err instanceof TapeError) throw headerFailure(file, err);
      throw err;
    }
    const exported = exportTape(tape, {
      captureContent: flags['capture-content'] === true,
      serviceName: (flags.service as string | undefined) ?? 'jukebox',
    });
    const spans = exported.telemetry.spans.length;
    const damage = tape.corruption
      ? new ExitError(
          ExitCode.tapeDamaged,
          `${file} is damaged (${tape.corruption.message}); exported the ${tape.frames.length} frames before the damage`,
        )
      : undefined;

    if (format !== undefined) {
      // The request itself is the output, with or without --json.
      process.stdout.write(`${JSON.stringify(signal === 'metrics' ? exported.metrics : exported.traces)}\n`);
      if (damage) throw damage;
      return;
    }

    const url = otlp as string;
    const results = [];
    try {
      if (signal !== 'metrics')
        results.push({ signal: 'traces', ...(await postOtlp(url, 'traces', exported.traces)) });
      if (signal !== 'traces')
        results.push({ signal: 'metrics', ...(await postOtlp(url, 'metrics', exported.metrics)) });
    } catch (err) {
      if (err instanceof OtlpEndpointError) throw usageError(err.message);
      if (err instanceof TelemetryExportError) throw new ExitError(ExitCode.failed, err.message, err);
      throw err;
    }
    const rejected = results.reduce((n, r) => n + r.rejected, 0);
    const sent = signal === 'metrics' ? 'metrics' : `${spans} spans${signal === 'all' ? ' and metrics' : ''}`;
    out.result(
      `exported ${sent} of ${path.basename(file)} to ${url} (trace ${exported.telemetry.traceId})` +
        (rejected ? `; the collector rejected ${rejected}` : ''),
      { file, traceId: exported.telemetry.traceId, spans, results },
    );
    if (damage) throw damage;
    if (rejected)
      throw new ExitError(
        ExitCode.failed,
        `the collector at ${url} rejected ${rejected} items: ${results
          .map((r) => r.rejectionMessage)
          .filter(Boolean)
          .join('; ')}`,
      );
  },
};
