/** OTLP/HTTP endpoint URLs: a collector's base URL and the per-signal paths the specification defines. */
import { OtlpEndpointError } from './errors';

export type OtlpSignal = 'traces' | 'metrics';

/** `http://host:4318` → `http://host:4318/v1/traces`; a URL already ending in `/v1/<signal>` is kept. */
export function otlpSignalUrl(base: string, signal: OtlpSignal): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new OtlpEndpointError(base, 'is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OtlpEndpointError(base, `uses ${url.protocol} (OTLP/HTTP needs http: or https:)`);
  const trimmed = url.pathname.replace(/\/v1\/(traces|metrics|logs)\/?$/, '').replace(/\/+$/, '');
  url.pathname = `${trimmed}/v1/${signal}`;
  return url.toString();
}
