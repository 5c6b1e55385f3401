/** Sends one OTLP/JSON request to a collector over HTTP and says what it accepted. */
import { TelemetryExportError } from '../errors';
import { type OtlpSignal, otlpSignalUrl } from '../otlpEndpoint';

export interface PostResult {
  url: string;
  status: number;
  /** Items the collector reported rejecting (OTLP partial success); 0 when it took everything. */
  rejected: number;
  rejectionMessage?: string;
}

export async function postOtlp(
  base: string,
  signal: OtlpSignal,
  body: unknown,
  options: { timeoutMs?: number } = {},
): Promise<PostResult> {
  const url = otlpSignalUrl(base, signal);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause ?? err;
    throw new TelemetryExportError(signal, url, cause);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) {
    const body = text.trim().slice(0, 300);
    throw new TelemetryExportError(
      signal,
      url,
      res.status === 404
        ? `HTTP 404 (${body}): the collector has no OTLP/HTTP receiver for ${signal}; send it only the signals it accepts (jbx export --signal traces)`
        : `HTTP ${res.status}: ${body}`,
    );
  }
  let rejected = 0;
  let rejectionMessage: string | undefined;
  try {
    const partial = (JSON.parse(text) as { partialSuccess?: Record<string, unknown> }).partialSuccess;
    rejected = Number(partial?.rejectedSpans ?? partial?.rejectedDataPoints ?? 0) || 0;
    if (typeof partial?.errorMessage === 'string' && partial.errorMessage)
      rejectionMessage = partial.errorMessage;
  } catch {
    // An empty or non-JSON 2xx body means full success.
  }
  return { url, status: res.status, rejected, ...(rejectionMessage ? { rejectionMessage } : {}) };
}
