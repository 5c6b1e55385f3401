import { existsSync } from 'node:fs';
import path from 'node:path';
import { JukeboxError } from '../../errors';
import { type RecordingProxy, startProxy } from '../../integrations/proxy';
import { tapeDirFromEnv } from '../../recorder';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';

const USAGE =
  'jbx proxy [--port P] [--host H] [--upstream URL] [--tape-dir D] [--cap-usd N | --no-breaker] | jbx proxy --replay TAPE [--port P] [--json]';

function portOf(value: string | undefined): number {
  if (value === undefined) return 4020;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw usageError(
      `--port must be an integer from 0 to 65535, got ${JSON.stringify(value)}\nusage: ${USAGE}`,
    );
  return port;
}

/** The per-session breaker: on with the default cap, --cap-usd N for another, --no-breaker for none. */
function breakerOf(
  cap: string | undefined,
  off: boolean | undefined,
): { capUsd: number } | false | undefined {
  if (off && cap !== undefined)
    throw usageError(`--cap-usd and --no-breaker contradict each other\nusage: ${USAGE}`);
  if (off) return false;
  if (cap === undefined) return undefined;
  const capUsd = Number(cap);
  if (!(Number.isFinite(capUsd) && capUsd > 0))
    throw usageError(
      `--cap-usd must be a positive number of US dollars, got ${JSON.stringify(cap)}\nusage: ${USAGE}`,
    );
  return { capUsd };
}

function upstreamOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const u = new URL(value);
    if (u.protocol === 'http:' || u.protocol === 'https:') return value;
  } catch {}
  throw usageError(
    `--upstream must be an http(s) URL such as http://127.0.0.1:4010, got ${JSON.stringify(value)}`,
  );
}

/** Runs until SIGINT / SIGTERM, then seals every session tape so each ends as a complete recording. */
function untilStopped(proxy: RecordingProxy): Promise<void> {
  return new Promise((resolve, reject) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      proxy.close().then(resolve, reject);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export const proxyCommand: CommandSpec = {
  name: 'proxy',
  usage: USAGE,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    upstream: { type: 'string' },
    'tape-dir': { type: 'string' },
    replay: { type: 'string' },
    'cap-usd': { type: 'string' },
    'no-breaker': { type: 'boolean' },
    json: { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    if (positionals.length) throw usageError(`unexpected argument ${positionals[0]}\nusage: ${USAGE}`);
    const replay = flags.replay as string | undefined;
    if (replay !== undefined && (flags.upstream !== undefined || flags['tape-dir'] !== undefined))
      throw usageError(
        `--replay serves a tape offline; it takes no --upstream or --tape-dir\nusage: ${USAGE}`,
      );
    if (replay !== undefined && !existsSync(replay)) throw usageError(`no such tape: ${replay}`);
    const tapeDir = path.resolve((flags['tape-dir'] as string | undefined) ?? tapeDirFromEnv());
    const upstream = upstreamOf(flags.upstream as string | undefined);
    const port = portOf(flags.port as string | undefined);
    const breaker = breakerOf(
      flags['cap-usd'] as string | undefined,
      flags['no-breaker'] as boolean | undefined,
    );
    if (replay !== undefined && breaker !== undefined)
      throw usageError(`--replay spends nothing; it takes no --cap-usd or --no-breaker\nusage: ${USAGE}`);
    let proxy: RecordingProxy;
    try {
      proxy = await startProxy({
        port,
        host: flags.host as string | undefined,
        upstream,
        tapeDir,
        replay,
        ...(breaker !== undefined ? { breaker } : {}),
      });
    } catch (err) {
      // An unreadable replay tape is a damaged tape; a taken port is an operation that failed.
      if (err instanceof JukeboxError && err.code === 'REPLAY_TAPE_UNUSABLE')
        throw new ExitError(ExitCode.tapeDamaged, err.message, err);
      throw new ExitError(ExitCode.failed, err instanceof Error ? err.message : String(err), err);
    }
    // Listening for the stop signal before printing the ready line: a script may send it as soon as it reads it.
    const stopped = untilStopped(proxy);
    const ready =
      proxy.mode === 'replay'
        ? `jbx proxy replaying ${replay} on ${proxy.url} (no upstream)`
        : `jbx proxy recording on ${proxy.url} -> ${upstream ?? 'api.openai.com / api.anthropic.com'}, tapes in ${tapeDir}`;
    // The ready line is the signal scripts wait for: stdout, one line (one JSON document with --json).
    out.result(
      `${ready}\nOpenAI base URL ${proxy.url}/v1, Anthropic base URL ${proxy.url}; session: header x-jukebox-session or route /s/NAME/`,
      {
        url: proxy.url,
        port: proxy.port,
        mode: proxy.mode,
        upstream: upstream ?? null,
        tapeDir: proxy.mode === 'record' ? tapeDir : null,
        replay: replay ?? null,
      },
    );
    await stopped;
    for (const s of proxy.sessions()) out.info(`session ${s.session}: ${s.calls} calls, tape ${s.tape}`);
  },
};
