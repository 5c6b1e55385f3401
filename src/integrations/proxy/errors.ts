import { type BreakerTrip, formatUsd } from '../../breaker/trip';
import { crossRealmError, JukeboxError } from '../../errors';

/** The upstream model API did not answer: refused, unreachable, or too slow to send its headers. */
export class ProxyUpstreamError extends JukeboxError {
  constructor(
    readonly upstream: string,
    cause: unknown,
  ) {
    const reason =
      cause instanceof Error ? ((cause.cause as Error | undefined)?.message ?? cause.message) : String(cause);
    super(
      'PROXY_UPSTREAM_UNREACHABLE',
      `jbx proxy could not reach the upstream ${upstream}: ${reason}. Start the model server (or check the ` +
        'network), or point the proxy elsewhere with --upstream URL.',
      { cause, nonRetryable: false },
    );
  }
}
crossRealmError('ProxyUpstreamError', ProxyUpstreamError);

/** A session's circuit breaker is open: the proxy answers its requests with this instead of forwarding them. */
export class ProxySessionTrippedError extends JukeboxError {
  constructor(
    readonly session: string,
    readonly trip: BreakerTrip,
  ) {
    super(
      'BREAKER_TRIPPED',
      `Circuit breaker tripped on jbx proxy session "${session}" by the ${trip.detector} detector: ${trip.reason} ` +
        `(session spend $${formatUsd(trip.spendUsd)}). The proxy refuses this session's requests from now on; the ` +
        'trip is on the session tape. Close the session (POST /_jukebox/sessions/NAME/close) to start afresh, ' +
        'or run jbx proxy with a higher --cap-usd.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('ProxySessionTrippedError', ProxySessionTrippedError);

/** The proxy could not listen where it was asked to. */
export class ProxyListenError extends JukeboxError {
  constructor(host: string, port: number, cause: unknown) {
    const inUse = (cause as NodeJS.ErrnoException)?.code === 'EADDRINUSE';
    super(
      inUse ? 'PROXY_PORT_IN_USE' : 'PROXY_LISTEN_FAILED',
      inUse
        ? `jbx proxy cannot listen on ${host}:${port}: the port is in use (a proxy left running?). Stop it or pass another --port.`
        : `jbx proxy cannot listen on ${host}:${port}: ${(cause as Error)?.message ?? cause}.`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ProxyListenError', ProxyListenError);
