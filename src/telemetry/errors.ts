import { crossRealmError, JukeboxError } from '../errors';

/** Telemetry could not be delivered. Reported once per exporter, never thrown into a run. */
export class TelemetryExportError extends JukeboxError {
  constructor(
    readonly signal: 'traces' | 'metrics',
    readonly endpoint: string,
    cause: unknown,
    /** From a worker's exporter: then the run goes on and later failures of the same outage stay quiet. */
    live = false,
  ) {
    super(
      'TELEMETRY_EXPORT_FAILED',
      `could not export ${signal} to ${endpoint}: ${cause instanceof Error ? cause.message : String(cause)}; ` +
        'check the OTLP/HTTP URL (e.g. http://127.0.0.1:4318) and that the collector is up' +
        (live
          ? '. Runs and recording go on; further failures are not reported until the endpoint answers again.'
          : ''),
      { cause, nonRetryable: false },
    );
  }
}
crossRealmError('TelemetryExportError', TelemetryExportError);

/** A worker was given telemetry options it cannot use. */
export class TelemetryConfigError extends JukeboxError {
  constructor(message: string) {
    super('TELEMETRY_CONFIG', message, { nonRetryable: true });
  }
}
crossRealmError('TelemetryConfigError', TelemetryConfigError);

/** An OTLP endpoint URL that is not an http(s) URL. */
export class OtlpEndpointError extends JukeboxError {
  constructor(
    readonly endpoint: string,
    reason: string,
  ) {
    super(
      'TELEMETRY_ENDPOINT',
      `OTLP endpoint "${endpoint}" ${reason}; give the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('OtlpEndpointError', OtlpEndpointError);
