/**
 * `jbx view`'s web server: plain ES modules, HTML and CSS from src/cli/viewer/web, and a small JSON API over the tapes
 * of one folder. It listens on 127.0.0.1 only, answers only GET/HEAD, only to a Host naming this address (a
 * page on another site cannot reach it through DNS rebinding), serves only the files it lists at start, and
 * forbids inline script through its Content-Security-Policy: tape contents are untrusted and reach the page
 * as JSON, rendered as text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
  applyQuery,
  CatalogQueryError,
  parseLimit,
  parseOutcomes,
  parseSince,
  parseSort,
  TapeCatalog,
  type TapeQuery,
} from '../../recorder/catalog';
import { temporalRunUrl } from './commandLine';
import { ViewerListenError } from './errors';
import { TapeLibrary, TapeNotServedError } from './tapeLibrary';

export const VIEWER_HOST = '127.0.0.1';
const WEB = path.join(__dirname, 'web');
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface ViewerOptions {
  /** The folder of tapes to serve. */
  dir: string;
  /** 0 (default): any free port. */
  port?: number;
  /** Base URL of the Temporal Web UI, e.g. http://127.0.0.1:8233. */
  temporalUi?: string;
  namespace?: string;
  /** Tape ids to read before listening, so the first page that opens them does not wait for the read. */
  preload?: string[];
}

export interface Viewer {
  url: string;
  port: number;
  dir: string;
  close(): Promise<void>;
}

function staticFiles(): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of readdirSync(WEB)) {
    const type = TYPES[path.extname(name)];
    if (type && /^[\w.-]+$/.test(name))
      files.set(`/${name}`, { type, body: readFileSync(path.join(WEB, name)) });
  }
  files.set('/', files.get('/index.html')!);
  return files;
}

function queryOf(params: URLSearchParams): TapeQuery {
  const q: TapeQuery = {};
  const get = (k: string) => params.get(k)?.trim() || undefined;
  const outcome = get('outcome');
  const since = get('since');
  const workflow = get('workflow');
  const sort = get('sort');
  const limit = get('limit');
  if (outcome) q.outcome = parseOutcomes(outcome);
  if (since) q.since = parseSince(since);
  if (workflow) q.workflow = workflow;
  if (sort) q.sort = parseSort(sort);
  if (limit) q.limit = parseLimit(limit);
  return q;
}

export async function startViewer(options: ViewerOptions): Promise<Viewer> {
  const dir = path.resolve(options.dir);
  const ui = options.temporalUi ?? 'http://127.0.0.1:8233';
  const namespace = options.namespace ?? 'default';
  const library = new TapeLibrary(dir, (h) => temporalRunUrl(ui, namespace, h.workflowId, h.runId));
  const catalog = new TapeCatalog({ dir });
  const files = staticFiles();
  for (const id of options.preload ?? []) {
    try {
      library.run(id);
    } catch (err) {
      // The page says what is wrong with it when it is opened.
      if (!(err instanceof TapeNotServedError)) throw err;
    }
  }
  let port = 0;

  const send = (
    res: http.ServerResponse,
    status: number,
    type: string,
    body: string | Buffer,
    head = false,
  ) => {
    res.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cross-origin-resource-policy': 'same-origin',
      'cache-control': 'no-store',
    });
    res.end(head ? undefined : body);
  };
  const json = (res: http.ServerResponse, status: number, value: unknown, head: boolean) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(value), head);

  async function api(url: URL): Promise<unknown> {
    const parts = url.pathname.split('/').slice(2).map(decodeURIComponent);
    if (parts[0] === 'config' && parts.length === 1) return { dir, temporalUi: ui, namespace };
    if (parts[0] === 'runs' && parts.length === 1) {
      const query = queryOf(url.searchParams);
      const listing = await catalog.list();
      // A symlink in the folder pointing elsewhere is listed by the catalog but never served: drop it before
      // the query's limit counts it.
      const served = listing.rows.filter((r) => library.serves(r.id));
      return {
        dir,
        total: served.length,
        rows: applyQuery(served, query).map(({ file: _file, ...row }) => row),
      };
    }
    if (parts[0] === 'runs' && parts.length === 2) return library.run(parts[1]!);
    if (parts[0] === 'runs' && parts.length === 4 && parts[2] === 'rows') {
      if (!/^\d{1,9}$/.test(parts[3]!))
        throw new TapeNotServedError(`row ${JSON.stringify(parts[3])} is not a number`, 400);
      return library.step(parts[1]!, Number(parts[3]));
    }
    if (parts[0] === 'diff' && parts.length === 1) {
      const a = url.searchParams.get('a');
      const b = url.searchParams.get('b');
      if (!a || !b) throw new TapeNotServedError('diff needs two tape ids: /api/diff?a=ID&b=ID', 400);
      return library.diff(a, b);
    }
    throw new TapeNotServedError(`no such endpoint: ${url.pathname}`, 404);
  }

  const server = http.createServer(async (req, res) => {
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      res.setHeader('allow', 'GET, HEAD');
      return json(res, 405, { error: `${req.method} is not allowed; the viewer only reads` }, false);
    }
    const host = req.headers.host ?? '';
    if (host !== `${VIEWER_HOST}:${port}` && host !== `localhost:${port}`)
      return json(res, 403, { error: `refused: Host ${JSON.stringify(host)} is not this viewer` }, head);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', `http://${VIEWER_HOST}:${port}`);
    } catch {
      return json(res, 400, { error: 'bad request URL' }, head);
    }
    if (url.pathname.startsWith('/api/')) {
      try {
        const t0 = performance.now();
        const value = await api(url);
        const t1 = performance.now();
        const body = JSON.stringify(value);
        // Where an answer's time went (reading and verifying a tape, then JSON), for devtools and the bench.
        res.setHeader(
          'server-timing',
          `api;dur=${(t1 - t0).toFixed(1)}, json;dur=${(performance.now() - t1).toFixed(1)}`,
        );
        return send(res, 200, 'application/json; charset=utf-8', body, head);
      } catch (err) {
        if (err instanceof TapeNotServedError) return json(res, err.status, { error: err.message }, head);
        if (err instanceof CatalogQueryError) return json(res, 400, { error: err.message }, head);
        if (err instanceof URIError) return json(res, 400, { error: 'bad escape in the URL' }, head);
        const message = err instanceof Error ? err.message : String(err);
        return json(res, 500, { error: `the viewer failed: ${message}` }, head);
      }
    }
    // Browsers ask for an icon on every page; a quiet "no content" keeps the console free of 404s.
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204, { 'cache-control': 'max-age=86400' });
      return res.end();
    }
    const file = files.get(url.pathname);
    if (!file) return json(res, 404, { error: `not found: ${url.pathname}` }, head);
    return send(res, 200, file.type, file.body, head);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new ViewerListenError(
          err.code === 'EADDRINUSE'
            ? `port ${options.port} on ${VIEWER_HOST} is in use; pick another with --port (0: any free port)`
            : `cannot listen on ${VIEWER_HOST}:${options.port ?? 0}: ${err.message}`,
          err,
        ),
      ),
    );
    server.listen(options.port ?? 0, VIEWER_HOST, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${VIEWER_HOST}:${port}/`,
    port,
    dir,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
