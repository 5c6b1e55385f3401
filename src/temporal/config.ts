import { crossRealmError, JukeboxError } from '../errors';

/** Where Jukebox finds Temporal. Every process (worker, client, tests, scripts) reads the same variables. */
export interface TemporalConfig {
  /** `host:port` of the frontend gRPC service. */
  address: string;
  host: string;
  port: number;
  namespace: string;
  /** Port of the dev server's Web UI (only meaningful for the dev server Jukebox starts). */
  uiPort: number;
}

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'jukebox';
export const DEFAULT_TEMPORAL_UI_PORT = 8233;

export function temporalConfigFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalConfig {
  const address = env.JUKEBOX_TEMPORAL_ADDRESS?.trim() || DEFAULT_TEMPORAL_ADDRESS;
  const { host, port } = splitAddress(address, 'JUKEBOX_TEMPORAL_ADDRESS');
  const uiPort = parsePort(
    env.JUKEBOX_TEMPORAL_UI_PORT?.trim() || String(DEFAULT_TEMPORAL_UI_PORT),
    'JUKEBOX_TEMPORAL_UI_PORT',
  );
  return {
    address,
    host,
    port,
    namespace: env.JUKEBOX_TEMPORAL_NAMESPACE?.trim() || DEFAULT_TEMPORAL_NAMESPACE,
    uiPort,
  };
}

/** Splits `host:port`; `source` names the setting in the error so the user knows what to fix. */
export function splitAddress(address: string, source = 'address'): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  if (at <= 0)
    throw new TemporalConfigInvalidError(
      source,
      `is "${address}", not host:port (for example 127.0.0.1:7233)`,
    );
  return {
    host: address.slice(0, at).replace(/^\[|\]$/g, ''),
    port: parsePort(address.slice(at + 1), source),
  };
}

function parsePort(text: string, source: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TemporalConfigInvalidError(source, `has port "${text}"; use a number from 1 to 65535`);
  }
  return port;
}

/** A Temporal setting (env var or option) cannot be used as given. */
export class TemporalConfigInvalidError extends JukeboxError {
  constructor(setting: string, problem: string) {
    super('TEMPORAL_CONFIG_INVALID', `${setting} ${problem}.`, { nonRetryable: true });
  }
}
crossRealmError('TemporalConfigInvalidError', TemporalConfigInvalidError);
