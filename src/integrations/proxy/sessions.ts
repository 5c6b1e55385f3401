/**
 * Which session a request belongs to: the `x-jukebox-session` header, or a `/s/<session>/` route prefix (for
 * clients that can set only a base URL, e.g. `http://127.0.0.1:P/s/crew-1/v1`). Neither: `default`.
 */
export const SESSION_HEADER = 'x-jukebox-session';
export const DEFAULT_SESSION = 'default';

export function sessionOf(
  pathname: string,
  header: string | string[] | undefined,
): { session: string; path: string } {
  const m = /^\/s\/([^/]+)(\/.*)$/.exec(pathname);
  if (m) return { session: decodeURIComponent(m[1] as string), path: m[2] as string };
  const h = Array.isArray(header) ? header[0] : header;
  return { session: h?.trim() || DEFAULT_SESSION, path: pathname };
}
